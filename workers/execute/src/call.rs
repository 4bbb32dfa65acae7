//! The one request of a claim, built before anything is sent: the request comes from the
//! provider's adapter, built from the approved snapshot alone, so every attempt sends the
//! same body (and key).

use fleet_core::payee::PayeeEvidence;
use fleet_core::{ActionSpec, OpRef};
use fleet_providers::{Operation, Provider, Providers, Request};
use fleet_store::{MandateHold, OperationRow};

/// Everything one call needs, built before the lease keeper starts.
pub(crate) struct Call<'a> {
    /// The operation, by tenant and id.
    pub key: OpRef<'a>,
    pub spec: &'static ActionSpec,
    pub op: Operation<'a>,
    pub provider: &'a Provider,
    pub request: Request,
    /// The standing mandate this call is made under, held until its answer (the send mark
    /// is written on the holding connection); `None` for an operation people approved.
    pub hold: Option<&'a MandateHold>,
}

/// The call `row` makes; `None` when the stored snapshot does not make one (prepare
/// validated this shape: reaching here is a bug, never a reason to guess).
pub(crate) fn call_of<'a>(providers: &'a Providers, row: &'a OperationRow) -> Option<Call<'a>> {
    let action = row.action;
    let op = Operation {
        action,
        tenant: &row.tenant_id,
        subject: row.subject(),
        idempotency_key: row.idempotency_key.as_str(),
        // The version the approver was shown: a payee changed since is refused.
        payee_version: row
            .payee
            .as_ref()
            .and_then(PayeeEvidence::from_json)
            .and_then(|p| p.version()),
    };
    let provider = providers.serving(&op)?;
    let request = provider.request(&op).ok()?;
    Some(Call {
        key: row.key(),
        spec: action.spec(),
        op,
        provider,
        request,
        hold: None,
    })
}
