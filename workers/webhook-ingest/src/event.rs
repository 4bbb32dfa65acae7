//! The provider event (docs/design.md#provider-webhooks) read from the verified raw body:
//! its type, the normalised fields of `data.object` that link and settle an operation, and
//! the hash of the whole event. Parsed once here; the store trusts the typed result.

pub use fleet_core::event_error::EventError;
use fleet_core::{hash_value, ProviderName};
use fleet_store::{EventKind, ReportedObject, WebhookEvent};
use serde_json::{Map, Value};

use crate::envelope::Verified;

/// Longest type or object field kept (ids, references, codes are far shorter).
const MAX_FIELD_CHARS: usize = 255;

/// Only a [`Verified`] delivery is read: nothing unsigned reaches the store. `provider`
/// is the one its envelope named, known to accept webhooks.
pub fn parse_event(
    provider: ProviderName,
    delivery: &Verified,
) -> Result<WebhookEvent, EventError> {
    let value: Value =
        serde_json::from_slice(&delivery.body).map_err(|_| EventError::NotAnObject)?;
    let event = value.as_object().ok_or(EventError::NotAnObject)?;
    let event_type = text(event, "type")?.ok_or(EventError::Missing("type"))?;
    // Where the object echoes our operation id depends on its kind (a payment's
    // `reference`, an envelope's `external_ref`).
    let reference_field = EventKind::of(&event_type).reference_field();
    let object = event
        .get("data")
        .and_then(Value::as_object)
        .ok_or(EventError::Missing("data"))?
        .get("object")
        .and_then(Value::as_object)
        .ok_or(EventError::Missing("data.object"))?;
    let amount_minor = match object.get("amount_minor") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_i64().ok_or(EventError::Invalid("amount_minor"))?),
    };
    Ok(WebhookEvent {
        provider,
        event_id: delivery.event_id.clone(),
        event_type,
        received_at: delivery.received_at,
        payload_hash: hash_value(&value),
        object: ReportedObject {
            id: text(object, "id")?,
            reference: text(object, reference_field)?,
            status: text(object, "status")?,
            amount_minor,
            currency: text(object, "currency")?,
            failure_code: text(object, "failure_code")?,
        },
    })
}

/// An optional string member: absent or null is `None`; anything else but a short
/// string is refused.
fn text(object: &Map<String, Value>, name: &'static str) -> Result<Option<String>, EventError> {
    match object.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() && s.chars().count() <= MAX_FIELD_CHARS => {
            Ok(Some(s.clone()))
        }
        Some(_) => Err(EventError::Invalid(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use fleet_core::catalogue::provider_spec::PAYMENTS;
    use serde_json::json;

    fn delivery(body: &[u8]) -> Verified {
        Verified {
            event_id: "evt_1".into(),
            received_at: Utc::now(),
            body: body.to_vec(),
        }
    }

    #[test]
    fn reads_the_type_and_the_linking_fields() {
        let body = json!({"id": "evt_1", "type": "payment.succeeded", "created_at": "2026-11-29T22:00:00Z",
            "data": {"object": {"id": "pay_1", "status": "succeeded", "reference": "op_X", "amount_minor": 100,
                                "currency": "KZT", "beneficiary_id": "vendor_77"}}});
        let event = parse_event(
            PAYMENTS.name,
            &delivery(&serde_json::to_vec(&body).unwrap()),
        )
        .unwrap();
        assert_eq!(event.event_type, "payment.succeeded");
        assert_eq!(event.event_id, "evt_1");
        assert_eq!(event.object.id.as_deref(), Some("pay_1"));
        assert_eq!(event.object.reference.as_deref(), Some("op_X"));
        assert_eq!(event.object.amount_minor, Some(100));
        assert_eq!(event.payload_hash, hash_value(&body).as_str());
        // Whitespace does not change the hash: it is over the canonical form.
        let pretty = parse_event(
            PAYMENTS.name,
            &delivery(&serde_json::to_vec_pretty(&body).unwrap()),
        )
        .unwrap();
        assert_eq!(pretty.payload_hash, event.payload_hash);
    }

    #[test]
    fn refuses_bodies_that_are_not_events() {
        let parse = |v: Value| {
            parse_event(PAYMENTS.name, &delivery(&serde_json::to_vec(&v).unwrap())).unwrap_err()
        };
        assert_eq!(
            parse_event(PAYMENTS.name, &delivery(b"not json")).unwrap_err(),
            EventError::NotAnObject
        );
        assert_eq!(parse(json!([1])), EventError::NotAnObject);
        assert_eq!(
            parse(json!({"data": {"object": {}}})),
            EventError::Missing("type")
        );
        assert_eq!(
            parse(json!({"type": "payment.succeeded"})),
            EventError::Missing("data")
        );
        assert_eq!(
            parse(json!({"type": "payment.succeeded", "data": {}})),
            EventError::Missing("data.object")
        );
        assert_eq!(
            parse(json!({"type": 7, "data": {"object": {}}})),
            EventError::Invalid("type")
        );
        assert_eq!(
            parse(json!({"type": "payment.succeeded", "data": {"object": {"reference": 5}}})),
            EventError::Invalid("reference")
        );
        assert_eq!(
            parse(json!({"type": "payment.succeeded", "data": {"object": {"amount_minor": 1.5}}})),
            EventError::Invalid("amount_minor")
        );
    }
}
