//! The doorbell: the only thing a work message carries. A worker that hears it reads the
//! row and acts on what the row says; the message itself is never trusted for more.
//!
//! Operation ids are unique per tenant (docs/design.md#tenant-boundaries), so a bell names
//! the tenant too. A bell rung before bells carried it (`tenant_id` absent) still names an
//! operation: the worker looks at every row with that id, which is harmless, since a bell
//! only says "look at this row now" and a row with nothing to do stays as it is.

use serde::{Deserialize, Serialize};

use crate::identifier::is_identifier;
use crate::ids::OperationId;

pub const DOORBELL_SCHEMA: &str = "doorbell.v1";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Doorbell {
    pub schema: String,
    pub operation_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
}

/// What a bell names: one operation of one tenant, or (a bell from before bells named the
/// tenant) every operation with that id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rung {
    pub operation_id: OperationId,
    pub tenant_id: Option<String>,
}

impl Doorbell {
    /// The bell for operation `op` of `tenant_id`.
    pub fn new(tenant_id: &str, op: &str) -> Self {
        Self {
            schema: DOORBELL_SCHEMA.to_owned(),
            operation_id: op.to_owned(),
            tenant_id: Some(tenant_id.to_owned()),
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
    pub fn parse(bytes: &[u8]) -> Result<Rung, &'static str> {
        if bytes.len() > 1024 {
            return Err("oversized");
        }
        let bell: Doorbell = serde_json::from_slice(bytes).map_err(|_| "malformed")?;
        if bell.schema != DOORBELL_SCHEMA {
            return Err("unsupported_schema");
        }
        let operation_id = OperationId::parse(&bell.operation_id).map_err(|_| "invalid_field")?;
        if bell.tenant_id.as_deref().is_some_and(|t| !is_identifier(t)) {
            return Err("invalid_field");
        }
        Ok(Rung {
            operation_id,
            tenant_id: bell.tenant_id,
        })
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
        assert_eq!(
            Doorbell::parse(&Doorbell::new("org_482", op.as_str()).to_bytes()),
            Ok(Rung {
                operation_id: op.clone(),
                tenant_id: Some("org_482".into())
            })
        );
        // A bell from before bells named the tenant names every row with the id.
        assert_eq!(
            Doorbell::parse(
                br#"{"schema":"doorbell.v1","operation_id":"op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8"}"#
            ),
            Ok(Rung {
                operation_id: op,
                tenant_id: None
            })
        );
        assert_eq!(
            Doorbell::parse(
                br#"{"schema":"doorbell.v1","operation_id":"op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8","tenant_id":""}"#
            ),
            Err("invalid_field")
        );
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
