//! A create the provider cannot deduplicate (`Effect::SearchedCreate`, e.g.
//! `crm.deal.create`): on every claim, search by the reference the create carries (the
//! operation id) BEFORE creating. One object found: it is ours, no create. Several: a
//! data incident for a person, never pick one. None: create — but only once the provider
//! can no longer commit an earlier, uncertain attempt (its maximum request time) and that
//! object would be searchable (its search lag); before that, the empty search proves
//! nothing.

use fleet_core::reconcile::{absence_provable, AttemptAges, Lookup};
use fleet_core::{AttemptOutcome, Outcome, Reason};
use fleet_store::{AttemptRecord, StoreError};
use serde_json::{json, Value};
use tracing::{info, warn};

use crate::call::Call;
use crate::handler::ExecuteHandler;

fn searched(outcome: Outcome, detail: &str, evidence: &Value) -> (Outcome, AttemptRecord) {
    let external_id = match &outcome {
        Outcome::Succeeded { external_id } => Some(external_id.clone()),
        _ => None,
    };
    let record = AttemptRecord {
        external_id,
        detail: Some(detail.to_owned()),
        response: Some(
            json!({ "searched_before_create": evidence.get("found").cloned().unwrap_or_else(|| json!([])) }),
        ),
        ..AttemptRecord::new(outcome.attempt_outcome())
    };
    (outcome, record)
}

impl ExecuteHandler {
    pub(crate) async fn create_safely(
        &self,
        call: &Call<'_>,
        fence: i64,
    ) -> Result<(Outcome, AttemptRecord), StoreError> {
        let op = call.key.operation_id;
        let nothing = json!({});
        // Measured before the search: the search proves absence only for what could have
        // been committed and indexed by the moment it ran.
        let earlier = self.deps.store.attempt_ages_before(call.key, fence).await?;
        let reading = call.provider.look_up(&call.op, None).await;
        let found = match reading.lookup {
            Lookup::Matches(found) => found,
            Lookup::Failed | Lookup::Ambiguous(_) => {
                // Nothing was sent: release the claim for a later attempt.
                warn!(operation_id = op, evidence = %reading.evidence, "search before create failed; not creating");
                return Ok(searched(
                    Outcome::NotExecuted {
                        reason: Reason::SearchFailed,
                    },
                    Reason::SearchFailed.as_str(),
                    &nothing,
                ));
            }
        };
        match found.as_slice() {
            [one] => {
                info!(
                    operation_id = op,
                    external_id = one.external_id(),
                    "the effect already exists; no create"
                );
                let ours = Outcome::from(one.clone());
                return Ok(searched(ours, "found_by_search", &reading.evidence));
            }
            [] => {}
            _ => {
                warn!(
                    operation_id = op,
                    count = found.len(),
                    "several objects carry this operation's reference; escalating"
                );
                // The same verdict reconcile's judge gives several matches.
                let incident = Outcome::Unknown {
                    reason: Reason::MultipleMatches,
                    escalate: true,
                };
                return Ok(searched(
                    incident,
                    Reason::MultipleMatches.as_str(),
                    &reading.evidence,
                ));
            }
        }
        let ages = AttemptAges {
            newest_ms: earlier.newest,
            newest_start_ms: earlier.newest_start,
            oldest_ms: earlier.oldest,
            failed_lookups_so_far: 0,
        };
        if absence_provable(ages, call.provider.contract()).is_err() {
            // An earlier create may still commit, or exist and not be searchable yet:
            // reconcile waits until an empty search proves absence.
            let wait = Outcome::Unknown {
                reason: Reason::SearchLagNotPassed,
                escalate: false,
            };
            return Ok(searched(
                wait,
                Reason::SearchLagNotPassed.as_str(),
                &nothing,
            ));
        }
        let earlier = self.deps.store.attempts(call.key).await?;
        if earlier
            .iter()
            .any(|a| a.fence < fence && a.outcome == Some(AttemptOutcome::Accepted))
        {
            // The provider queued an earlier create: it may still appear. Never create twice.
            let wait = Outcome::Unknown {
                reason: Reason::QueuedCreateNotFound,
                escalate: false,
            };
            return Ok(searched(
                wait,
                Reason::QueuedCreateNotFound.as_str(),
                &nothing,
            ));
        }
        // A search can take long: confirm the lease is still ours right before the one
        // call that cannot be deduplicated.
        if !self
            .deps
            .store
            .renew_lease(call.key, fence, self.deps.settings.lease_ttl_ms)
            .await?
        {
            return Ok(searched(
                Outcome::NotExecuted {
                    reason: Reason::LeaseLostBeforeCreate,
                },
                Reason::LeaseLostBeforeCreate.as_str(),
                &nothing,
            ));
        }
        let sent = call.provider.send(&call.op, &call.request).await;
        let outcome = call.spec.classify(&sent, &call.op.subject);
        let record = AttemptRecord::of(&sent, &outcome);
        Ok((outcome, record))
    }
}
