//! The intake's check that an intent is under the policy the deployment put in force for
//! its tenant and action (`fleet_store`'s `policy_in_force`: the tenant's assignment, else
//! the default). The agent's `policy_version` only confirms it: naming another is refused
//! (`policy_not_in_force`), never obeyed. Run by both doors first among the checks against
//! the world, so nothing is looked up for an intent that will be refused; the database
//! checks the same again when the operation is inserted.

use fleet_core::PolicyRefusal;
use fleet_store::component::StoreIntents;
use fleet_store::{StoreAs, StoreError};
use tracing::warn;

use crate::checked::{counted, CheckedIntent, Refusal};

/// `checked` if its policy is the one in force; else its refusal. Postgres failing is the
/// outer error: nothing was decided.
pub async fn in_force<R: StoreIntents>(
    checked: CheckedIntent,
    store: &StoreAs<R>,
) -> Result<Result<CheckedIntent, Refusal>, StoreError> {
    let intent = &checked.intent;
    let named = intent.snapshot.policy_version.as_str();
    let refusal = match store
        .policy_in_force(&intent.snapshot.tenant_id, intent.action)
        .await?
    {
        Some(version) if version == named => return Ok(Ok(checked)),
        Some(version) => {
            warn!(operation_id = %intent.operation_id, action = intent.action.wire_name(), policy_version = named, in_force = %version, reason = PolicyRefusal::NotInForce.reason(), "intent refused: it names a policy other than the one in force for its tenant and action");
            PolicyRefusal::NotInForce
        }
        None => {
            warn!(operation_id = %intent.operation_id, action = intent.action.wire_name(), reason = PolicyRefusal::UnknownPolicy.reason(), "intent refused: no policy is in force for its action (fleetctl policy assign)");
            PolicyRefusal::ActionNotInPolicy
        }
    };
    Ok(Err(counted(Refusal::new(
        refusal.reason(),
        Some(refusal.field()),
    ))))
}
