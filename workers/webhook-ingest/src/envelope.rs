//! `webhook.v1`: the message the receiver publishes to `webhooks.ingest` once a delivery
//! is verified. It carries the provider (from the path), the event id (`webhook-id`,
//! the dedup key), when it was received, and the raw body byte for byte (base64), so
//! the consumer hashes and parses exactly what was signed. Only the receiver publishes
//! to this queue; like every queue it is internal to the fleet.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub const ENVELOPE_SCHEMA: &str = "webhook.v1";

/// Largest envelope the consumer reads: a body at the receiver's largest limit (1 MiB),
/// base64-expanded, plus the other fields.
pub const MAX_ENVELOPE_BYTES: usize = 1_400 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    pub schema: String,
    pub provider: String,
    pub event_id: String,
    pub received_at: DateTime<Utc>,
    pub body_b64: String,
}

/// Why a message on `webhooks.ingest` is not an envelope: its dead-letter reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    #[error("larger than {MAX_ENVELOPE_BYTES} bytes")]
    Oversized,
    #[error("not a webhook.v1 envelope")]
    Malformed,
    #[error("unknown envelope schema")]
    UnsupportedSchema,
}

impl EnvelopeError {
    pub fn reason(self) -> &'static str {
        match self {
            EnvelopeError::Oversized => "oversized",
            EnvelopeError::Malformed => "malformed",
            EnvelopeError::UnsupportedSchema => "unsupported_schema",
        }
    }
}

impl Envelope {
    pub fn new(provider: &str, event_id: &str, received_at: DateTime<Utc>, body: &[u8]) -> Envelope {
        Envelope {
            schema: ENVELOPE_SCHEMA.to_owned(),
            provider: provider.to_owned(),
            event_id: event_id.to_owned(),
            received_at,
            body_b64: STANDARD.encode(body),
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("an envelope always serialises")
    }

    /// The envelope and the raw body it carries.
    pub fn parse(bytes: &[u8]) -> Result<(Envelope, Vec<u8>), EnvelopeError> {
        if bytes.len() > MAX_ENVELOPE_BYTES {
            return Err(EnvelopeError::Oversized);
        }
        let envelope: Envelope = serde_json::from_slice(bytes).map_err(|_| EnvelopeError::Malformed)?;
        if envelope.schema != ENVELOPE_SCHEMA {
            return Err(EnvelopeError::UnsupportedSchema);
        }
        let body = STANDARD.decode(&envelope.body_b64).map_err(|_| EnvelopeError::Malformed)?;
        Ok((envelope, body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_the_body_byte_for_byte() {
        let body = b"{\"id\": \"evt_1\",\n \"x\": \"\xc3\xa9\"}";
        let at = DateTime::parse_from_rfc3339("2026-11-29T22:00:00.123Z").unwrap().with_timezone(&Utc);
        let envelope = Envelope::new("payments", "evt_1", at, body);
        let (parsed, raw) = Envelope::parse(&envelope.to_bytes()).unwrap();
        assert_eq!((parsed, raw.as_slice()), (envelope, &body[..]));
    }

    #[test]
    fn refuses_what_is_not_an_envelope() {
        assert_eq!(Envelope::parse(b"nope").unwrap_err(), EnvelopeError::Malformed);
        let v2 = br#"{"schema":"webhook.v2","provider":"p","event_id":"e","received_at":"2026-11-29T22:00:00Z","body_b64":""}"#;
        assert_eq!(Envelope::parse(v2).unwrap_err(), EnvelopeError::UnsupportedSchema);
        let extra = br#"{"schema":"webhook.v1","provider":"p","event_id":"e","received_at":"2026-11-29T22:00:00Z","body_b64":"","x":1}"#;
        assert_eq!(Envelope::parse(extra).unwrap_err(), EnvelopeError::Malformed);
        let not_b64 = br#"{"schema":"webhook.v1","provider":"p","event_id":"e","received_at":"2026-11-29T22:00:00Z","body_b64":"!!"}"#;
        assert_eq!(Envelope::parse(not_b64).unwrap_err(), EnvelopeError::Malformed);
        assert_eq!(Envelope::parse(&vec![b' '; MAX_ENVELOPE_BYTES + 1]).unwrap_err(), EnvelopeError::Oversized);
    }
}
