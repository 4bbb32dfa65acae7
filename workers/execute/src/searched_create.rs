//! A create the provider cannot deduplicate (`Effect::SearchedCreate`, e.g.
//! `crm.deal.create`): on every claim, search by the reference the create carries (the
//! operation id) BEFORE creating. One object found: it is ours, no create. Several: a
//! data incident for a person, never pick one. None: create — but only once the provider
//! can no longer commit an earlier, uncertain attempt (its maximum request time) and that
//! object would be searchable (its search lag); before that, the empty search proves
//! nothing. What the search proves is `fleet_core::execute::before_create`'s (reconcile's
//! verdict, judged for a create); this file searches, reads the attempts, and sends.

use fleet_core::attempt_record::AttemptDetail;
use fleet_core::execute::{before_create, queued_create_not_found, BeforeCreate, SearchedAnswer};
use fleet_core::reconcile::{AttemptAges, Lookup};
use fleet_core::{AttemptOutcome, Outcome, Reason};
use fleet_store::{AttemptRecord, StoreError};
use serde_json::{json, Value};
use tracing::{info, warn};

use crate::admitted::{send_until_admitted, until_admitted, Throttled};
use crate::batches::Batches;
use crate::call::Call;
use crate::deps::ExecuteDeps;

/// The claim's answer without a create, with the attempt that records it (and what the
/// search found, when the answer rests on it).
fn searched(answer: SearchedAnswer, evidence: &Value) -> (Outcome, AttemptRecord) {
    let SearchedAnswer {
        outcome, detail, ..
    } = answer;
    let external_id = match &outcome {
        Outcome::Succeeded { external_id } => Some(external_id.clone()),
        _ => None,
    };
    let record = AttemptRecord {
        external_id,
        detail: Some(detail.to_text()),
        response: Some(
            json!({ "searched_before_create": evidence.get("found").cloned().unwrap_or_else(|| json!([])) }),
        ),
        ..AttemptRecord::new(outcome.attempt_outcome())
    };
    (outcome, record)
}

pub(crate) async fn create_safely(
    deps: &ExecuteDeps,
    batches: &Batches,
    call: &Call<'_>,
    fence: i64,
    throttled: &mut Throttled,
) -> Result<(Outcome, AttemptRecord), StoreError> {
    let op = call.key.operation_id;
    let nothing = json!({});
    // Measured before the search: the search proves absence only for what could have
    // been committed and indexed by the moment it ran.
    let earlier = deps.store.attempt_ages_before(call.key, fence).await?;
    // A search the provider refuses for its rate is asked again within the claim,
    // as the create would be: a 429 read nothing.
    let (reading, _) = until_admitted(
        call,
        throttled,
        || call.provider.look_up_once(&call.op, None),
        |(_, refused)| *refused,
    )
    .await;
    let ages = AttemptAges {
        newest_ms: earlier.newest,
        newest_start_ms: earlier.newest_start,
        oldest_ms: earlier.oldest,
        failed_lookups_so_far: 0,
    };
    if let BeforeCreate::Answer(answer) =
        before_create(&reading.lookup, ages, call.provider.contract())
    {
        let found = match &reading.lookup {
            Lookup::Matches(found) => found.as_slice(),
            Lookup::Failed | Lookup::Ambiguous(_) => &[],
        };
        match &answer.outcome {
            Outcome::NotExecuted { .. } => {
                warn!(operation_id = op, evidence = %reading.evidence, "search before create failed; not creating")
            }
            Outcome::Unknown { escalate: true, .. } => warn!(
                operation_id = op,
                count = found.len(),
                "several objects carry this operation's reference; escalating"
            ),
            Outcome::Unknown { .. } => {}
            _ => info!(
                operation_id = op,
                external_id = found.first().map_or("", |one| one.external_id()),
                "the effect already exists; no create"
            ),
        }
        let evidence = if answer.keeps_found {
            &reading.evidence
        } else {
            &nothing
        };
        return Ok(searched(answer, evidence));
    }
    let earlier = deps.store.attempts(call.key).await?;
    if earlier
        .iter()
        .any(|a| a.fence < fence && a.outcome == Some(AttemptOutcome::Accepted))
    {
        return Ok(searched(queued_create_not_found(), &nothing));
    }
    // A search can take long: confirm the lease is still ours right before the one
    // call that cannot be deduplicated.
    if !deps
        .store
        .renew_lease(call.key, fence, deps.settings.lease_ttl_ms)
        .await?
    {
        let lost = SearchedAnswer {
            outcome: Outcome::NotExecuted {
                reason: Reason::LeaseLostBeforeCreate,
            },
            detail: AttemptDetail::Because {
                reason: Reason::LeaseLostBeforeCreate,
            },
            keeps_found: false,
        };
        return Ok(searched(lost, &nothing));
    }
    let sent = send_until_admitted(deps, batches, call, fence, throttled).await;
    let outcome = call.provider.classify(&call.op, &sent);
    let record = AttemptRecord::of(&sent, &outcome);
    Ok((outcome, record))
}
