//! `crm.deal.create` without idempotency keys: on every claim, search by external id
//! (= operation id) BEFORE creating. One deal found: it is ours, no POST. Several: a data
//! incident for a person, never pick one. None: create — but only once the CRM can no
//! longer commit an earlier, uncertain attempt (its maximum request time) and that deal
//! would be searchable (its search lag); before that, the empty search proves nothing.

use fleet_core::reconcile::{absence_provable, AttemptAges};
use fleet_core::{classify_deal_create, Outcome};
use fleet_providers::DealRequest;
use fleet_store::{AttemptRecord, StoreError};
use serde_json::{json, Value};
use tracing::{info, warn};

use crate::handler::ExecuteHandler;
use crate::perform::attempt_record;

fn searched(outcome: Outcome, detail: &str, found: Vec<&str>) -> (Outcome, AttemptRecord) {
    let external_id = match &outcome {
        Outcome::Succeeded { external_id } => Some(external_id.clone()),
        _ => None,
    };
    let record = AttemptRecord {
        outcome: outcome.label(),
        external_id,
        detail: Some(detail.to_owned()),
        response: Some(json!({ "searched_before_create": found })),
        ..Default::default()
    };
    (outcome, record)
}

impl ExecuteHandler {
    pub(crate) async fn create_deal_safely(&self, request: &DealRequest, fence: i64) -> Result<(Outcome, AttemptRecord), StoreError> {
        let op = request.external_id.as_str();
        // Measured before the search: the search proves absence only for what could have
        // been committed and indexed by the moment it ran.
        let earlier = self.deps.store.attempt_ages_before(op, fence).await?;
        let deals = match self.deps.crm.find_deals_by_external_id(op).await {
            Ok(deals) => deals,
            Err(e) => {
                // Nothing was sent: release the claim for a later attempt.
                warn!(operation_id = op, error = %e, "CRM search failed; not creating");
                return Ok(searched(Outcome::NotExecuted { reason: "search_failed".into() }, "search_failed", vec![]));
            }
        };
        // Only deals that carry exactly our external id count (a CRM search may match loosely).
        let ids: Vec<&str> = deals
            .iter()
            .filter(|d| d.get("external_id").and_then(Value::as_str) == Some(op))
            .filter_map(|d| d.get("id").and_then(Value::as_str))
            .collect();
        match ids.as_slice() {
            [id] => {
                info!(operation_id = op, deal_id = id, "deal already exists; no create");
                let found = Outcome::Succeeded { external_id: (*id).to_owned() };
                return Ok(searched(found, "found_by_search", ids.clone()));
            }
            [] => {}
            _ => {
                warn!(operation_id = op, count = ids.len(), "several deals carry this external id; escalating");
                let incident = Outcome::Unknown { reason: "multiple_deals".into(), escalate: true };
                return Ok(searched(incident, "multiple_deals", ids.clone()));
            }
        }
        let ages = AttemptAges { newest_ms: earlier.newest, newest_start_ms: earlier.newest_start, oldest_ms: earlier.oldest, failed_lookups_so_far: 0 };
        if absence_provable(ages, self.deps.crm_contract).is_err() {
            // An earlier create may still commit, or exist and not be searchable yet:
            // reconcile waits until an empty search proves absence.
            let wait = Outcome::Unknown { reason: "search_lag_not_passed".into(), escalate: false };
            return Ok(searched(wait, "search_lag_not_passed", vec![]));
        }
        let earlier = self.deps.store.attempts(op).await?;
        if earlier.iter().any(|a| a.fence < fence && a.outcome.as_deref() == Some("accepted")) {
            // The CRM queued an earlier create: it may still appear. Never create twice.
            let wait = Outcome::Unknown { reason: "queued_create_not_found".into(), escalate: false };
            return Ok(searched(wait, "queued_create_not_found", vec![]));
        }
        // A search can take long: confirm the lease is still ours right before the one
        // call that cannot be deduplicated.
        if !self.deps.store.renew_lease(op, fence, self.deps.settings.lease_ttl_ms).await? {
            return Ok(searched(Outcome::NotExecuted { reason: "lease_lost_before_create".into() }, "lease_lost_before_create", vec![]));
        }
        let call = self.deps.crm.create_deal(request).await;
        let outcome = classify_deal_create(&call);
        let record = attempt_record(&call, &outcome);
        Ok((outcome, record))
    }
}
