//! The intake's read of the payment a refund gives money back from, at a provider that
//! describes it (the payments provider spoken as Stripe; `fleet_core::stripe::refundable`):
//! a payment charged for another tenant is refused (`object_of_other_tenant`), one Stripe
//! does not have is refused (`payment_unknown`), a refund larger than what is left of it
//! is refused (`refund_exceeds_payment`). What was read (the customer, the card, the date,
//! the amount, what was refunded before) is kept in the operation's `prepared` history
//! event for the approver. A read that gets no answer refuses nothing: the intent waits,
//! as for a payee's lookup. Only ids and amounts are logged.

use fleet_core::IntakeRefusal;
use tracing::{info, warn};

use crate::checked::{counted, CheckedIntent, IntakeRules, Refusal};
use crate::payee::DirectoryUnreachable;

/// Reads before the intake gives up and the intent waits.
const ATTEMPTS: u32 = 3;
const BACKOFF: std::time::Duration = std::time::Duration::from_millis(100);

/// `checked` with its refund's payment as evidence, or the refusal; `Err`: no answer.
pub async fn with_refunded(
    mut checked: CheckedIntent,
    rules: &IntakeRules,
) -> Result<Result<CheckedIntent, Refusal>, DirectoryUnreachable> {
    let intent = &checked.intent;
    let payload = &intent.snapshot.payload;
    let Some(provider) = rules
        .payees
        .providers()
        .get(intent.action.spec().provider.as_str())
    else {
        return Ok(Ok(checked));
    };
    let mut tries = 0;
    let found = loop {
        tries += 1;
        let Some(answer) = provider
            .look_up_refunded(&intent.snapshot.tenant_id, intent.action, payload)
            .await
        else {
            return Ok(Ok(checked));
        };
        match answer {
            Ok(found) => break found,
            Err(error) if tries >= ATTEMPTS => {
                warn!(operation_id = %intent.operation_id, tries, %error, "the refund's payment could not be read; the intent waits");
                return Err(DirectoryUnreachable);
            }
            Err(_) => tokio::time::sleep(BACKOFF * tries).await,
        }
    };
    let refuse = |reason: IntakeRefusal, field: &str| {
        warn!(operation_id = %intent.operation_id, reason = reason.as_str(), field, "intent refused: the refund does not fit its payment");
        Ok(Err(counted(Refusal::of(reason, Some(field)))))
    };
    let Some(found) = found else {
        return refuse(IntakeRefusal::PaymentUnknown, "payload.payment_id");
    };
    let amount_minor = payload
        .get("amount_minor")
        .and_then(serde_json::Value::as_i64)
        .unwrap_or(i64::MAX);
    let currency = payload
        .get("currency")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default();
    if let Err(refusal) = found.judge(&intent.snapshot.tenant_id, amount_minor, currency) {
        return refuse(refusal.refusal(), refusal.field());
    }
    info!(operation_id = %intent.operation_id, payment = %found.id, received_minor = found.received_minor, refunded_minor = found.refunded_minor, "refund's payment read");
    checked.refunded = Some(found.to_json());
    Ok(Ok(checked))
}
