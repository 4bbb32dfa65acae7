//! A verified Stripe event as the store's [`WebhookEvent`]s: one per refund it reports
//! ([`fleet_core::stripe_events::refund_reports`]), for the payments provider, each
//! linked by the refund's `metadata[fleet_operation]` (the operation's key) or else its
//! `re_…` id, exactly as the reference provider's events link.

use fleet_core::catalogue::provider_spec::PAYMENTS;
use fleet_core::hash_value;
use fleet_core::stripe_events::refund_reports;
use fleet_store::{ReportedObject, WebhookEvent};
use serde_json::Value;

use crate::envelope::VerifiedStripe;
use crate::event::EventError;

/// The connected account a verified event comes from (its top-level `account`); `None`:
/// the platform's own event, or a body that is no event (refused by [`parse_stripe_event`]).
pub fn event_account(delivery: &VerifiedStripe) -> Option<String> {
    let value: Value = serde_json::from_slice(&delivery.body).ok()?;
    value.get("account")?.as_str().map(str::to_owned)
}

/// The event as it is stored when it comes from an account other than its operation's
/// tenant's: under a type no catalogue entry applies (`stripe.other_account.…`), with
/// nothing it could be linked by later, so it changes nothing, then or ever.
pub fn from_other_account(event: WebhookEvent) -> WebhookEvent {
    WebhookEvent {
        event_type: format!("stripe.other_account.{}", event.event_type),
        object: ReportedObject {
            id: None,
            reference: None,
            ..event.object
        },
        ..event
    }
}

/// The events to ingest, in the order the event lists its refunds; never empty.
pub fn parse_stripe_event(delivery: &VerifiedStripe) -> Result<Vec<WebhookEvent>, EventError> {
    let value: Value =
        serde_json::from_slice(&delivery.body).map_err(|_| EventError::NotAnObject)?;
    let reports = refund_reports(&value)?;
    let payload_hash = hash_value(&value);
    Ok(reports
        .into_iter()
        .map(|r| WebhookEvent {
            provider: PAYMENTS.name,
            event_id: r.event_id,
            event_type: r.event_type,
            received_at: delivery.received_at,
            payload_hash: payload_hash.clone(),
            object: ReportedObject {
                id: r.refund_id,
                reference: r.operation,
                status: r.status,
                amount_minor: r.amount_minor,
                currency: r.currency,
                failure_code: r.failure_code,
            },
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use serde_json::json;

    #[test]
    fn a_refund_event_becomes_one_payments_event_linked_by_the_operation_key() {
        let body = json!({"id": "evt_1", "type": "refund.updated", "data": {"object": {
            "id": "re_1", "object": "refund", "status": "succeeded", "amount": 700, "currency": "kzt",
            "metadata": {"fleet_operation": "key_1"}}}});
        let delivery = VerifiedStripe {
            received_at: Utc::now(),
            body: serde_json::to_vec(&body).unwrap(),
        };
        let events = parse_stripe_event(&delivery).unwrap();
        assert_eq!(events.len(), 1);
        let e = &events[0];
        assert_eq!(
            (e.provider, e.event_id.as_str(), e.event_type.as_str()),
            (PAYMENTS.name, "evt_1", "refund.succeeded")
        );
        assert_eq!(e.object.reference.as_deref(), Some("key_1"));
        assert_eq!(e.object.id.as_deref(), Some("re_1"));
        assert_eq!(e.object.currency.as_deref(), Some("KZT"));
        assert_eq!(e.payload_hash, hash_value(&body));
        // From another account than its operation's tenant's: nothing left to apply or
        // to link by, ever.
        let connect = VerifiedStripe {
            received_at: Utc::now(),
            body: serde_json::to_vec(&json!({"account": "acct_1Acme", "id": "evt_2"})).unwrap(),
        };
        assert_eq!(event_account(&connect).as_deref(), Some("acct_1Acme"));
        assert_eq!(event_account(&delivery), None);
        let other = from_other_account(e.clone());
        assert_eq!(other.event_type, "stripe.other_account.refund.succeeded");
        assert_eq!(
            fleet_core::webhook::EventKind::of(&other.event_type),
            fleet_core::webhook::EventKind::Unsupported
        );
        assert_eq!((other.object.id, other.object.reference), (None, None));
        assert_eq!(other.event_id, e.event_id);
        let not_json = VerifiedStripe {
            received_at: Utc::now(),
            body: b"nope".to_vec(),
        };
        assert_eq!(
            parse_stripe_event(&not_json).unwrap_err(),
            EventError::NotAnObject
        );
    }
}
