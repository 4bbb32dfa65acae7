//! What a Stripe event reports about refunds, for the payments provider spoken as Stripe:
//! pure rules, no HTTP and no signature (the receiver verified that). An event is read
//! into one [`RefundReport`] per refund it carries, each in the words the webhook
//! consumer already applies (`refund.succeeded`, `refund.failed`, `refund.pending`, the
//! refund action's catalogue events), so a Stripe event goes through the same dedup,
//! link and state machine as any other provider's.
//!
//! - `refund.created`, `refund.updated`, `refund.failed`: `data.object` is the refund.
//! - `charge.refunded`: `data.object` is the charge; each of `refunds.data[]` is a
//!   refund, reported under its own id (`<evt>:<re>`), so a redelivery of the event is
//!   a duplicate of each of them.
//! - `transfer.created`, `transfer.updated`, `transfer.reversed`: `data.object` is a
//!   transfer, the payment `payment.create` made ([`read_transfer`]): reported as
//!   `payment.succeeded`. A reversal moves money back later; it does not undo the payment
//!   the operation made, so it settles an operation still unknown as succeeded, like the
//!   other two, and changes nothing on one already final.
//! - `payment_intent.succeeded`, `payment_intent.payment_failed`,
//!   `payment_intent.processing`, `payment_intent.canceled`: `data.object` is the
//!   PaymentIntent a charge made, read as the create's answer is
//!   ([`read_payment_intent`]): reported as `payment_intent.succeeded`,
//!   `payment_intent.failed` (with the decline's code) or `payment_intent.processing`
//!   (applies nothing), the charge action's catalogue events.
//! - anything else: one report of type `stripe.<type>`, which names no catalogue object,
//!   so it is stored for deduplication and counted, never applied.
//!
//! A refund's status reads as the create's answer does ([`read_refund`]): `succeeded`
//! settles, `failed` and `canceled` fail with Stripe's `failure_reason`, `pending` and
//! `requires_action` apply nothing. The operation is the refund's
//! `metadata[fleet_operation]` ([`operation_of`]).
//!
//! Stripe's reference: <https://docs.stripe.com/api/events/types>.

use serde_json::{Map, Value};

use crate::event_error::EventError;
use crate::lookup::Found;
use crate::stripe::charge::read_payment_intent;
use crate::stripe::transfer::read_transfer;
use crate::stripe::{operation_of, read_refund};

/// Longest id or type kept (Stripe's ids are far shorter).
const MAX_FIELD_CHARS: usize = 255;

/// One refund (or transfer) as an event reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundReport {
    /// The deduplication key: the event's `evt_…` id (with `:<re_…>` for a charge's
    /// refund).
    pub event_id: String,
    /// `refund.succeeded` / `refund.failed` / `refund.pending`, or `stripe.<type>` for
    /// what applies nothing.
    pub event_type: String,
    /// The refund's `re_…` id.
    pub refund_id: Option<String>,
    /// The operation's idempotency key, from `metadata[fleet_operation]`.
    pub operation: Option<String>,
    pub status: Option<String>,
    pub amount_minor: Option<i64>,
    /// Upper case, as the fleet writes currencies (Stripe writes them lower case).
    pub currency: Option<String>,
    pub failure_code: Option<String>,
}

impl RefundReport {
    fn ignored(event_id: &str, event_type: &str) -> RefundReport {
        RefundReport {
            event_id: event_id.to_owned(),
            event_type: format!("stripe.{event_type}"),
            refund_id: None,
            operation: None,
            status: None,
            amount_minor: None,
            currency: None,
            failure_code: None,
        }
    }
}

/// The refunds a verified Stripe event reports; never empty.
pub fn refund_reports(event: &Value) -> Result<Vec<RefundReport>, EventError> {
    let event = event.as_object().ok_or(EventError::NotAnObject)?;
    let id = text(event, "id")?.ok_or(EventError::Missing("id"))?;
    if !id.starts_with("evt_") {
        return Err(EventError::Invalid("id"));
    }
    let event_type = text(event, "type")?.ok_or(EventError::Missing("type"))?;
    let object = event
        .get("data")
        .and_then(|d| d.get("object"))
        .and_then(Value::as_object)
        .ok_or(EventError::Missing("data.object"))?;
    match event_type {
        "refund.created" | "refund.updated" | "refund.failed" => {
            Ok(vec![report(id, event_type, object)?])
        }
        "charge.refunded" => {
            let refunds = object
                .get("refunds")
                .and_then(|r| r.get("data"))
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let mut reports = Vec::with_capacity(refunds.len());
            for refund in refunds {
                let refund = refund
                    .as_object()
                    .ok_or(EventError::Invalid("refunds.data"))?;
                let refund_id =
                    text(refund, "id")?.ok_or(EventError::Missing("refunds.data.id"))?;
                reports.push(report(&format!("{id}:{refund_id}"), event_type, refund)?);
            }
            if reports.is_empty() {
                reports.push(RefundReport::ignored(id, event_type));
            }
            Ok(reports)
        }
        "transfer.created" | "transfer.updated" | "transfer.reversed" => {
            Ok(vec![transfer_report(id, event_type, object)?])
        }
        "payment_intent.succeeded"
        | "payment_intent.payment_failed"
        | "payment_intent.processing"
        | "payment_intent.canceled" => Ok(vec![payment_intent_report(id, event_type, object)?]),
        other => Ok(vec![RefundReport::ignored(id, other)]),
    }
}

/// One transfer object: the payment made (`payment.succeeded`), under its `tr_…` id.
fn transfer_report(
    event_id: &str,
    event_type: &str,
    transfer: &Map<String, Value>,
) -> Result<RefundReport, EventError> {
    let value = Value::Object(transfer.clone());
    if read_transfer(&value).is_none() {
        return Ok(RefundReport::ignored(event_id, event_type));
    }
    let amount_minor = match transfer.get("amount") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_i64().ok_or(EventError::Invalid("amount"))?),
    };
    Ok(RefundReport {
        event_id: event_id.to_owned(),
        event_type: "payment.succeeded".to_owned(),
        refund_id: text(transfer, "id")?.map(str::to_owned),
        operation: operation_of(&value).map(str::to_owned),
        status: Some("succeeded".to_owned()),
        amount_minor,
        currency: text(transfer, "currency")?.map(str::to_ascii_uppercase),
        failure_code: None,
    })
}

/// One PaymentIntent (a charge), read as the create's answer is, under its `pi_…` id.
fn payment_intent_report(
    event_id: &str,
    event_type: &str,
    intent: &Map<String, Value>,
) -> Result<RefundReport, EventError> {
    let value = Value::Object(intent.clone());
    let (status, failure_code) = match read_payment_intent(&value) {
        Some(Found::Succeeded { .. }) => ("succeeded", None),
        Some(Found::Failed { code, .. }) => ("failed", Some(code)),
        Some(Found::Pending { .. }) => ("processing", None),
        None => return Ok(RefundReport::ignored(event_id, event_type)),
    };
    let amount_minor = match intent.get("amount") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_i64().ok_or(EventError::Invalid("amount"))?),
    };
    Ok(RefundReport {
        event_id: event_id.to_owned(),
        event_type: format!("payment_intent.{status}"),
        refund_id: text(intent, "id")?.map(str::to_owned),
        operation: operation_of(&value).map(str::to_owned),
        status: Some(status.to_owned()),
        amount_minor,
        currency: text(intent, "currency")?.map(str::to_ascii_uppercase),
        failure_code,
    })
}

/// One refund object, read as the create's answer is.
fn report(
    event_id: &str,
    event_type: &str,
    refund: &Map<String, Value>,
) -> Result<RefundReport, EventError> {
    let value = Value::Object(refund.clone());
    let (normalised, failure_code) = match read_refund(&value) {
        Some(Found::Succeeded { .. }) => ("refund.succeeded".to_owned(), None),
        Some(Found::Failed { code, .. }) => ("refund.failed".to_owned(), Some(code)),
        Some(Found::Pending { .. }) => ("refund.pending".to_owned(), None),
        // Not a refund, or a status this version does not know: never guessed.
        None => return Ok(RefundReport::ignored(event_id, event_type)),
    };
    let amount_minor = match refund.get("amount") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_i64().ok_or(EventError::Invalid("amount"))?),
    };
    Ok(RefundReport {
        event_id: event_id.to_owned(),
        event_type: normalised,
        refund_id: text(refund, "id")?.map(str::to_owned),
        operation: operation_of(&value).map(str::to_owned),
        status: text(refund, "status")?.map(str::to_owned),
        amount_minor,
        currency: text(refund, "currency")?.map(str::to_ascii_uppercase),
        failure_code,
    })
}

/// An optional short string member.
fn text<'a>(
    object: &'a Map<String, Value>,
    name: &'static str,
) -> Result<Option<&'a str>, EventError> {
    match object.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() && s.chars().count() <= MAX_FIELD_CHARS => {
            Ok(Some(s))
        }
        Some(_) => Err(EventError::Invalid(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refund(id: &str, status: &str) -> Value {
        json!({"id": id, "object": "refund", "status": status, "amount": 1200, "currency": "kzt",
               "metadata": {"fleet_operation": "key_A", "fleet_tenant": "t1"}})
    }

    fn event(id: &str, event_type: &str, object: Value) -> Value {
        json!({"id": id, "object": "event", "type": event_type, "data": {"object": object}})
    }

    #[test]
    fn payment_intent_events_report_the_charge() {
        let intent = |status: &str| {
            json!({"id": "pi_1", "object": "payment_intent", "status": status, "amount": 1250,
                   "currency": "kzt", "metadata": {"fleet_operation": "key_C"},
                   "last_payment_error": {"code": "card_declined", "decline_code": "insufficient_funds"}})
        };
        let read = |kind: &str, status: &str| {
            let reports = refund_reports(&event("evt_c", kind, intent(status))).unwrap();
            assert_eq!(reports.len(), 1);
            reports.into_iter().next().unwrap()
        };
        let ok = read("payment_intent.succeeded", "succeeded");
        assert_eq!(ok.event_type, "payment_intent.succeeded");
        assert_eq!(ok.refund_id.as_deref(), Some("pi_1"));
        assert_eq!(ok.operation.as_deref(), Some("key_C"));
        assert_eq!(
            (ok.amount_minor, ok.currency.as_deref()),
            (Some(1250), Some("KZT"))
        );
        let failed = read("payment_intent.payment_failed", "requires_payment_method");
        assert_eq!(failed.event_type, "payment_intent.failed");
        assert_eq!(failed.failure_code.as_deref(), Some("insufficient_funds"));
        let canceled = read("payment_intent.canceled", "canceled");
        assert_eq!(canceled.event_type, "payment_intent.failed");
        let processing = read("payment_intent.processing", "processing");
        assert_eq!(processing.event_type, "payment_intent.processing");
        assert_eq!(
            crate::webhook::EventKind::of("payment_intent.succeeded"),
            crate::webhook::EventKind::Status {
                action: crate::Action::ChargeCreate,
                reported: crate::webhook::Reported::Succeeded
            }
        );
        assert_eq!(
            read("payment_intent.succeeded", "requires_confirmation").event_type,
            "stripe.payment_intent.succeeded"
        );
    }

    #[test]
    fn a_transfer_event_reports_the_payment_made() {
        let transfer = json!({"id": "tr_1", "object": "transfer", "amount": 5000,
                              "currency": "kzt", "reversed": false,
                              "metadata": {"fleet_operation": "key_P"}});
        for kind in ["transfer.created", "transfer.updated", "transfer.reversed"] {
            let reports = refund_reports(&event("evt_9", kind, transfer.clone())).unwrap();
            assert_eq!(
                reports,
                vec![RefundReport {
                    event_id: "evt_9".into(),
                    event_type: "payment.succeeded".into(),
                    refund_id: Some("tr_1".into()),
                    operation: Some("key_P".into()),
                    status: Some("succeeded".into()),
                    amount_minor: Some(5000),
                    currency: Some("KZT".into()),
                    failure_code: None,
                }],
                "{kind}"
            );
        }
        let not_a_transfer = json!({"id": "po_1", "object": "payout"});
        let reports = refund_reports(&event("evt_8", "transfer.created", not_a_transfer)).unwrap();
        assert_eq!(reports[0].event_type, "stripe.transfer.created");
    }

    #[test]
    fn a_refund_event_reports_its_refund_by_status() {
        let reports = refund_reports(&event(
            "evt_1",
            "refund.updated",
            refund("re_1", "succeeded"),
        ))
        .unwrap();
        assert_eq!(
            reports,
            vec![RefundReport {
                event_id: "evt_1".into(),
                event_type: "refund.succeeded".into(),
                refund_id: Some("re_1".into()),
                operation: Some("key_A".into()),
                status: Some("succeeded".into()),
                amount_minor: Some(1200),
                currency: Some("KZT".into()),
                failure_code: None,
            }]
        );
        let mut failed = refund("re_1", "failed");
        failed["failure_reason"] = json!("lost_or_stolen_card");
        let failed = &refund_reports(&event("evt_2", "refund.failed", failed)).unwrap()[0];
        assert_eq!(failed.event_type, "refund.failed");
        assert_eq!(failed.failure_code.as_deref(), Some("lost_or_stolen_card"));
        let canceled = &refund_reports(&event(
            "evt_3",
            "refund.updated",
            refund("re_1", "canceled"),
        ))
        .unwrap()[0];
        assert_eq!(
            (
                canceled.event_type.as_str(),
                canceled.failure_code.as_deref()
            ),
            ("refund.failed", Some("refund_canceled"))
        );
        for pending in ["pending", "requires_action"] {
            let r = &refund_reports(&event("evt_4", "refund.created", refund("re_1", pending)))
                .unwrap()[0];
            assert_eq!(r.event_type, "refund.pending");
        }
        let odd =
            &refund_reports(&event("evt_5", "refund.updated", refund("re_1", "weird"))).unwrap()[0];
        assert_eq!(odd.event_type, "stripe.refund.updated");
    }

    #[test]
    fn a_charge_refunded_reports_each_of_its_refunds_under_its_own_id() {
        let charge = json!({"id": "ch_1", "object": "charge",
            "refunds": {"object": "list", "data": [refund("re_1", "succeeded"), refund("re_2", "pending")]}});
        let reports = refund_reports(&event("evt_9", "charge.refunded", charge)).unwrap();
        let seen: Vec<(&str, &str)> = reports
            .iter()
            .map(|r| (r.event_id.as_str(), r.event_type.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                ("evt_9:re_1", "refund.succeeded"),
                ("evt_9:re_2", "refund.pending")
            ]
        );
        let bare = json!({"id": "ch_1", "object": "charge"});
        let reports = refund_reports(&event("evt_9", "charge.refunded", bare)).unwrap();
        assert_eq!(reports[0].event_type, "stripe.charge.refunded");
    }

    #[test]
    fn other_types_are_reported_as_nothing_to_apply() {
        let reports =
            refund_reports(&event("evt_7", "customer.created", json!({"id": "cus_1"}))).unwrap();
        assert_eq!(
            reports,
            vec![RefundReport::ignored("evt_7", "customer.created")]
        );
    }

    #[test]
    fn bodies_that_are_not_events_are_refused() {
        assert_eq!(
            refund_reports(&json!([1])).unwrap_err(),
            EventError::NotAnObject
        );
        assert_eq!(
            refund_reports(&json!({"type": "refund.updated"})).unwrap_err(),
            EventError::Missing("id")
        );
        assert_eq!(
            refund_reports(&json!({"id": "x_1", "type": "refund.updated"})).unwrap_err(),
            EventError::Invalid("id")
        );
        assert_eq!(
            refund_reports(&json!({"id": "evt_1", "type": "refund.updated"})).unwrap_err(),
            EventError::Missing("data.object")
        );
        let mut bad = refund("re_1", "succeeded");
        bad["amount"] = json!("12");
        assert_eq!(
            refund_reports(&event("evt_1", "refund.updated", bad)).unwrap_err(),
            EventError::Invalid("amount")
        );
    }
}
