//! Asking the provider, read-only, through the adapter of the provider serving the
//! operation's action: by the external id we know (strongly consistent), else by our
//! reference (eventually consistent, bounded by the provider's search lag) or the target
//! the action changed. What the answer proves is read by the action's catalogue entry.

use fleet_core::reconcile::{ProviderContract, Reading};
use fleet_core::Reason;
use fleet_providers::{Operation, Provider, Providers};
use fleet_store::OperationRow;
use serde_json::json;

/// The provider serving `row`'s action; `None` when this deployment configures none.
pub fn provider_of<'a>(providers: &'a Providers, row: &OperationRow) -> Option<&'a Provider> {
    providers.get(row.action.spec().provider.as_str())
}

pub async fn look_up(
    providers: &Providers,
    row: &OperationRow,
    external_id: Option<&str>,
) -> Reading {
    let action = row.action;
    let Some(provider) = provider_of(providers, row) else {
        return Reading::ambiguous(
            Reason::UnknownAction,
            json!({"via": "none", "action": row.action}),
        );
    };
    let op = Operation {
        action,
        tenant: &row.tenant_id,
        subject: row.subject(),
        idempotency_key: row.idempotency_key.as_str(),
        // A lookup sends no precondition.
        payee_version: None,
    };
    provider.look_up(&op, external_id).await
}

/// The contract `row`'s provider documents, with reconcile's own patience for failed
/// lookups. A row no provider serves gets a contract that proves nothing absent.
pub fn contract_of(
    providers: &Providers,
    row: &OperationRow,
    escalate_after_failed_lookups: u32,
) -> ProviderContract {
    let documented = provider_of(providers, row)
        .map(Provider::contract)
        .unwrap_or(ProviderContract {
            search_lag_ms: u64::MAX,
            max_request_ms: u64::MAX,
            key_retention_ms: 0,
            escalate_after_failed_lookups,
        });
    ProviderContract {
        escalate_after_failed_lookups,
        ..documented
    }
}
