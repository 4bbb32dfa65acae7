//! What a provider's objects say about an effect: one object read ([`Found`]), and what a
//! lookup returned ([`Lookup`], with its evidence in a [`Reading`]). The actions read their
//! provider's objects into these; execute's classification and reconcile's verdicts judge
//! them.

use serde_json::{json, Value};

use crate::reason::Reason;

/// What one provider object says about the effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    Succeeded { external_id: String },
    Failed { external_id: String, code: String },
    Pending { external_id: String },
}

impl Found {
    pub fn external_id(&self) -> &str {
        match self {
            Found::Succeeded { external_id }
            | Found::Failed { external_id, .. }
            | Found::Pending { external_id } => external_id,
        }
    }

    /// Reads a payment or refund object of the reference payments API.
    pub fn from_object(object: &Value) -> Option<Found> {
        let external_id = object.get("id")?.as_str()?.to_owned();
        match object.get("status")?.as_str()? {
            "succeeded" => Some(Found::Succeeded { external_id }),
            "pending" => Some(Found::Pending { external_id }),
            "failed" => {
                let code = object
                    .get("failure_code")
                    .and_then(Value::as_str)
                    .unwrap_or("payment_failed")
                    .to_owned();
                Some(Found::Failed { external_id, code })
            }
            _ => None,
        }
    }
}

/// The result of asking the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// Every object the search returned (zero, one or several).
    Matches(Vec<Found>),
    /// The provider could not be asked, or answered something unreadable.
    Failed,
    /// The provider answered, but what it holds cannot be matched to this operation
    /// automatically (e.g. a deal whose version moved with other values).
    Ambiguous(Reason),
}

/// What one lookup proved, with the evidence recorded for the operation's history (what
/// was asked and the ids that came back, never whole objects).
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub lookup: Lookup,
    pub evidence: Value,
}

impl Reading {
    pub fn ambiguous(reason: Reason, evidence: Value) -> Reading {
        Reading {
            lookup: Lookup::Ambiguous(reason),
            evidence,
        }
    }

    /// `lookup` with `evidence` that also names the effects found, as a search's does
    /// (an empty list: the lookup proved the effect did not happen).
    pub fn with_found(lookup: Lookup, mut evidence: Value) -> Reading {
        if let Lookup::Matches(found) = &lookup {
            evidence["found"] = found.iter().map(Found::external_id).collect();
        }
        Reading { lookup, evidence }
    }

    /// The provider could not be asked (`error` says why, without any body).
    pub fn failed(via: &str, error: &str) -> Reading {
        Reading {
            lookup: Lookup::Failed,
            evidence: json!({"via": via, "error": error}),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paid(id: &str) -> Found {
        Found::Succeeded {
            external_id: id.into(),
        }
    }

    #[test]
    fn provider_objects_are_read_by_status() {
        assert_eq!(
            Found::from_object(&json!({"id": "pay_1", "status": "succeeded"})),
            Some(paid("pay_1"))
        );
        assert_eq!(
            Found::from_object(&json!({"id": "pay_1", "status": "pending"})),
            Some(Found::Pending {
                external_id: "pay_1".into()
            })
        );
        assert_eq!(
            Found::from_object(
                &json!({"id": "pay_1", "status": "failed", "failure_code": "insufficient_funds"})
            ),
            Some(Found::Failed {
                external_id: "pay_1".into(),
                code: "insufficient_funds".into()
            })
        );
        assert_eq!(
            Found::from_object(&json!({"id": "pay_1", "status": "weird"})),
            None
        );
        assert_eq!(Found::from_object(&json!({"status": "succeeded"})), None);
    }
}
