//! The post-settlement audit: an operation that succeeded after an uncertain attempt is
//! looked up once more, by our reference, once the provider can no longer commit an earlier
//! request. Several provider objects mean the provider made a second effect we could not
//! prevent: the operation is escalated with every id as evidence and counted, so a person
//! can undo it. The goal is that this never finds anything; the audit proves it.

use std::time::Duration;

use fleet_core::reconcile::{audit, AuditFinding};
use fleet_providers::Providers;
use fleet_runtime::metric_names as m;
use fleet_store::{AuditDelays, OperationRow, StoreError};
use serde_json::json;
use tracing::{error, info, warn};

use crate::lookup::look_up;
use crate::reconciler::Reconciler;

/// How long after settling each provider's operations are audited (its maximum request
/// time plus its search lag); a provider this build does not know, as late as any it
/// knows.
pub(crate) fn audit_delays(providers: &Providers) -> AuditDelays {
    let by_provider: Vec<(String, Duration)> = providers
        .audit_delays()
        .into_iter()
        .map(|(p, d)| (p.to_owned(), d))
        .collect();
    let otherwise = by_provider
        .iter()
        .map(|(_, d)| *d)
        .max()
        .unwrap_or(Duration::ZERO);
    AuditDelays {
        by_provider,
        otherwise,
    }
}

impl Reconciler {
    /// Audits one succeeded operation (taken from `Store::due_audits`).
    pub(crate) async fn audit(&self, row: &OperationRow) -> Result<(), StoreError> {
        let op = row.operation_id.as_str();
        let key = row.key();
        if !row.action.spec().may_duplicate() {
            // A conditional update cannot apply twice: its precondition moves with the first.
            self.store
                .record_audit(key, false, &json!({"via": "conditional_update"}))
                .await?;
            return Ok(());
        }
        // By reference only: a lookup by the settled id would always find exactly one.
        let outcome = look_up(&self.providers, row, None).await;
        match audit(&outcome.lookup) {
            AuditFinding::Single => {
                self.store
                    .record_audit(key, false, &outcome.evidence)
                    .await?;
            }
            AuditFinding::Duplicate => {
                if self
                    .store
                    .record_audit(key, true, &outcome.evidence)
                    .await?
                {
                    metrics::counter!(m::DUPLICATE_EFFECTS_DETECTED_TOTAL, "provider" => row.provider.as_str(), "action" => row.action.wire_name()).increment(1);
                    error!(operation_id = op, evidence = %outcome.evidence, "the provider holds more than one effect for this operation; escalated");
                }
            }
            AuditFinding::Inconclusive => {
                warn!(
                    operation_id = op,
                    "audit lookup failed; auditing again later"
                );
                self.store
                    .postpone_audit(key, self.settings.lookup_recheck())
                    .await?;
            }
        }
        info!(operation_id = op, "audited");
        Ok(())
    }
}
