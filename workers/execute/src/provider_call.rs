//! The one provider call of a claim, as the action's catalogue entry says its effect comes
//! about: a keyed create or a conditional update is sent (and sent again only while it
//! provably never left); a searched create searches first (`searched_create`). The answer
//! is classified as the provider's answers read (the catalogue entry's rules, or the
//! provider's own, e.g. Stripe's).

use fleet_core::outcome::settle_conflict;
use fleet_core::{Effect, Outcome};
use fleet_store::{AttemptRecord, StoreError};

use crate::admitted::{send_until_admitted, Throttled};
use crate::batches::Batches;
use crate::call::Call;
use crate::deps::ExecuteDeps;
use crate::earlier::earlier_outcomes;
use crate::lease;
use crate::searched_create::create_safely;

/// The one provider call of this claim.
pub(crate) async fn call_provider(
    deps: &ExecuteDeps,
    batches: &Batches,
    call: &Call<'_>,
    fence: i64,
) -> Result<(Outcome, AttemptRecord), StoreError> {
    // One patience with the provider's 429s for all of this claim's requests.
    let mut throttled = Throttled::new(lease::give_up_after(deps.settings.lease_ttl_ms));
    if call.spec.effect == Effect::SearchedCreate {
        return create_safely(deps, batches, call, fence, &mut throttled).await;
    }
    let sent = send_until_admitted(deps, batches, call, fence, &mut throttled).await;
    let mut outcome = call.provider.classify(&call.op, &sent);
    if matches!(outcome, Outcome::Conflict { .. }) {
        // Rare path: an earlier request of ours (under the operation's key) may be
        // what broke the precondition.
        let earlier = earlier_outcomes(&deps.store, call.key, fence).await?;
        outcome = settle_conflict(outcome, &earlier);
    }
    let record = AttemptRecord::of(&sent, &outcome);
    Ok((outcome, record))
}
