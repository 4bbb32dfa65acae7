//! Who a charge takes money from, read again before it is sent. The approver was shown
//! the customer's saved payment method as the provider described it at intake (the
//! operation's payee evidence); a payment method detached since, or now another card or
//! account (another fingerprint, last four digits or country), is not what was approved:
//! the operation is cancelled without a request, as a payment whose payee changed is
//! (`beneficiary_changed`), and a person approves a new intent if the charge still
//! stands. Only the masked account and the fingerprint are logged.

use fleet_core::attempt_record::AttemptDetail;
use fleet_core::execute::Payer;
use fleet_core::outcome::settle_conflict;
use fleet_core::payee::PayeeEvidence;
use fleet_core::stripe::charge::same_payer;
use fleet_core::{AttemptOutcome, Outcome, Precondition, Reason};
use fleet_store::{AttemptRecord, OperationRow, StoreError};
use tracing::{info, warn};

use crate::call::Call;
use crate::deps::ExecuteDeps;
use crate::earlier::earlier_outcomes;

/// What a check of the payer decided, when it decided anything: the outcome recorded
/// without a call, its attempt and the evidence for the history.
pub(crate) type Decided = (Outcome, AttemptRecord, Option<serde_json::Value>);

/// What the payer check found: `Payer::AsApproved` when the payer is the approved one, or
/// the action names none its provider describes (the call goes ahead); otherwise, with
/// what is recorded instead of a call.
pub(crate) type PayerRead = (Payer, Option<Decided>);

pub(crate) async fn payer_changed_before_call(
    deps: &ExecuteDeps,
    call: &Call<'_>,
    row: &OperationRow,
    fence: i64,
) -> Result<PayerRead, StoreError> {
    let Some(approved) = row.payee.as_ref().and_then(PayeeEvidence::from_json) else {
        return Ok((Payer::AsApproved, None));
    };
    let Some(answer) = call
        .provider
        .look_up_payer(call.op.tenant, call.op.action, call.op.subject.payload)
        .await
    else {
        return Ok((Payer::AsApproved, None));
    };
    let op = call.key.operation_id;
    let now = match answer {
        Ok(now) => now,
        Err(error) => {
            // Nothing was sent, and nothing is known about the payer: the claim is
            // released and tried again.
            warn!(operation_id = op, fence, %error, "payer could not be read before the charge; not sending");
            let attempt = AttemptRecord::with_detail(
                AttemptOutcome::NotExecuted,
                &AttemptDetail::PayerLookupFailed,
            );
            let outcome = Outcome::NotExecuted {
                reason: Reason::NotSent,
            };
            return Ok((Payer::Unreadable, Some((outcome, attempt, None))));
        }
    };
    if same_payer(&approved, &now) {
        info!(operation_id = op, fence, "payer as approved");
        return Ok((Payer::AsApproved, None));
    }
    let current = match &now {
        Ok(PayeeEvidence::Found { payee, .. }) => {
            format!("{} ({})", payee.account.masked, payee.account.fingerprint)
        }
        Ok(PayeeEvidence::Unknown { .. }) => "unreadable".to_owned(),
        Err(refusal) => refusal.refusal().as_str().to_owned(),
    };
    let approved_account = approved
        .found()
        .map_or("-".to_owned(), |p| p.account.masked.clone());
    let detail =
        format!("payer changed after approval: {approved_account} → {current}; nothing was sent");
    warn!(operation_id = op, fence, "{detail}");
    // An earlier attempt of ours whose fate is unknown may have charged already: then
    // a lookup decides, never a cancellation.
    let earlier = earlier_outcomes(&deps.store, call.key, fence).await?;
    let outcome = settle_conflict(
        Outcome::Conflict {
            on: Precondition::Payee,
            current: Some(current),
        },
        &earlier,
    );
    let attempt = AttemptRecord::with_detail(
        outcome.attempt_outcome(),
        &AttemptDetail::Words { text: detail },
    );
    let now_json = match &now {
        Ok(evidence) => evidence.to_json(),
        Err(refusal) => serde_json::json!({"refused": refusal.refusal().as_str()}),
    };
    let evidence = serde_json::json!({
        "payee_changed": {"approved_version": approved.version(), "now": now_json}
    });
    Ok((Payer::Changed, Some((outcome, attempt, Some(evidence)))))
}
