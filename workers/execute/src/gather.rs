//! The facts `fleet_core::execute::gate` decides a claimed attempt on, gathered from the
//! claimed row, the store, the signature checks and the provider; and what the claim
//! keeps for what the gate decides (the built request, the mandate held for the call,
//! what the payer check would record). Only reads, but for the mandate's hold, which a
//! call must keep until its answer.
//!
//! The checks are all gathered; what is learnt at the call only once they clear, and each
//! of its facts only while the ones before it let the call go ahead: nothing more is asked
//! of the provider or the database for a call that will not be made.

use fleet_core::execute::{AtCall, Payer, PreCallFacts};
use fleet_core::reconcile::key_trusted;
use fleet_core::Effect;
use fleet_store::{ClaimedOperation, MandateHold, StoreError};
use tokio::time::Instant;
use tracing::info;

use crate::call::{call_of, Call};
use crate::deps::ExecuteDeps;
use crate::lease;
use crate::mandate_check::{mandate_holds, mandate_of};
use crate::pause;
use crate::payer_check::{payer_changed_before_call, Decided};
use crate::signatures::signatures_hold;

/// A claim's facts, with what the gate's answer needs.
pub(crate) struct PreCall<'a> {
    pub facts: PreCallFacts,
    /// The request, when the stored snapshot makes one.
    pub call: Option<Call<'a>>,
    /// The mandate held for the call, when one approved the operation and still stands.
    pub hold: Option<MandateHold>,
    /// What the payer check records instead of a call, when it decided.
    pub payer: Option<Decided>,
    /// When the call may start (the provider call's duration counts from here).
    pub started: Instant,
}

pub(crate) async fn gather<'a>(
    deps: &'a ExecuteDeps,
    claimed: &'a ClaimedOperation,
    claim_sent_at: Instant,
) -> Result<PreCall<'a>, StoreError> {
    let row = &claimed.row;
    let fence = claimed.fence;
    let signatures_hold = match row.signatures_required {
        0 => None,
        _ => Some(signatures_hold(deps, row).await?),
    };
    let mandate_holds = match mandate_of(row) {
        Some(mandate_id) => Some(mandate_holds(deps, row, mandate_id).await?),
        None => None,
    };
    let call = call_of(&deps.providers, row);
    let key_trusted_for_resend = match &call {
        Some(call) if call.spec.effect == Effect::KeyedCreate && row.attempts > 1 => {
            Some(key_still_trusted(deps, call, fence).await?)
        }
        _ => None,
    };
    let mut pre = PreCall {
        facts: PreCallFacts {
            snapshot_hash_matches: row.snapshot().hash() == row.payload_hash,
            signatures_hold,
            mandate_holds,
            call_buildable: call.is_some(),
            key_trusted_for_resend,
            at_call: None,
        },
        call,
        hold: None,
        payer: None,
        started: Instant::now(),
    };
    if !pre.facts.checks_clear() {
        return Ok(pre);
    }
    let Some(call) = &pre.call else {
        return Ok(pre);
    };
    let (payer, decided) = payer_changed_before_call(deps, call, row, fence).await?;
    let mut at_call = AtCall {
        payer,
        mandate_revoked: false,
        lease_stalled: false,
    };
    pre.payer = decided;
    if payer == Payer::AsApproved {
        // Under a mandate, the call holds it until its answer: a revocation waits for the
        // answer, or, committed first, stops the call here (migrations/0068).
        if mandate_of(row).is_some() {
            pre.hold = deps.store.hold_mandate(row.key(), fence).await?;
            at_call.mandate_revoked = pre.hold.is_none();
        }
        if !at_call.mandate_revoked {
            info!(operation_id = %row.operation_id, action = %row.action, provider = %row.provider, fence, "claimed; calling the provider");
            pause::point(pause::BEFORE_PROVIDER_CALL).await;
            pre.started = Instant::now();
            at_call.lease_stalled =
                pre.started >= claim_sent_at + lease::give_up_after(deps.settings.lease_ttl_ms);
        }
    }
    pre.facts.at_call = Some(at_call);
    Ok(pre)
}

/// Whether the key's first use (the operation's first attempt) is recent enough that the
/// provider still deduplicates it, by the database clock.
async fn key_still_trusted(
    deps: &ExecuteDeps,
    call: &Call<'_>,
    fence: i64,
) -> Result<bool, StoreError> {
    let ages = deps.store.attempt_ages_before(call.key, fence).await?;
    Ok(ages
        .oldest
        .is_none_or(|first_use| key_trusted(first_use, call.provider.contract())))
}
