//! The doorbell: the only thing a work message carries. A worker that hears it reads the
//! row and acts on what the row says; the message itself is never trusted for more.

use serde::{Deserialize, Serialize};

use crate::ids::OperationId;

pub const DOORBELL_SCHEMA: &str = "doorbell.v1";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Doorbell {
    pub schema: String,
    pub operation_id: String,
}

impl Doorbell {
    pub fn new(op: &OperationId) -> Self {
        Self {
            schema: DOORBELL_SCHEMA.to_owned(),
            operation_id: op.as_str().to_owned(),
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a doorbell always serialises")
    }

    /// Every reason [`Doorbell::parse`] refuses a bell with (the dead-letter reasons of the
    /// doorbell queues, known before the first refusal).
    pub const REFUSALS: [&'static str; 4] = [
        "oversized",
        "malformed",
        "unsupported_schema",
        "invalid_field",
    ];

    /// Parses a doorbell; the error is the bounded dead-letter reason.
    pub fn parse(bytes: &[u8]) -> Result<OperationId, &'static str> {
        if bytes.len() > 1024 {
            return Err("oversized");
        }
        let bell: Doorbell = serde_json::from_slice(bytes).map_err(|_| "malformed")?;
        if bell.schema != DOORBELL_SCHEMA {
            return Err("unsupported_schema");
        }
        OperationId::parse(&bell.operation_id).map_err(|_| "invalid_field")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_is_listed() {
        let long = vec![b' '; 1025];
        for bad in [
            &long[..],
            b"nope",
            br#"{"schema":"doorbell.v2","operation_id":"x"}"#,
            br#"{"schema":"doorbell.v1","operation_id":"x"}"#,
        ] {
            let reason = Doorbell::parse(bad).unwrap_err();
            assert!(Doorbell::REFUSALS.contains(&reason), "{reason}");
        }
    }

    #[test]
    fn round_trips_and_refuses_garbage() {
        let op = OperationId::parse("op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8").unwrap();
        assert_eq!(Doorbell::parse(&Doorbell::new(&op).to_bytes()), Ok(op));
        assert_eq!(Doorbell::parse(b"nope"), Err("malformed"));
        assert_eq!(
            Doorbell::parse(br#"{"schema":"doorbell.v2","operation_id":"x"}"#),
            Err("unsupported_schema")
        );
        assert_eq!(
            Doorbell::parse(br#"{"schema":"doorbell.v1","operation_id":"x"}"#),
            Err("invalid_field")
        );
    }
}
