//! How a success was confirmed: the receipt an operation carries when it becomes
//! `succeeded`. A success is never just a status: it names the provider's object and what
//! proved it (the provider's answer to one attempt, a lookup at the provider, a signed
//! provider event, or an operator's stated evidence). The store writes it in the history
//! row of the move (`evidence.confirmed`) and the database refuses the move without one
//! (migrations/0069_evidence.sql), so no path (worker, operator, a role's plain SQL)
//! makes a receipt out of nothing.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What proved the success, with what the database checks it against. Its JSON names how
/// (`by`) beside the members of its kind: `{"by": "answer", "object_id", "fence",
/// "provider_request_id"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case", deny_unknown_fields)]
pub enum Confirmation {
    /// The provider's answer to the attempt of `fence` made `object_id`.
    Answer {
        object_id: String,
        fence: i64,
        provider_request_id: Option<String>,
    },
    /// A lookup at the provider found `object_id` final; `lookup` is what was asked and
    /// answered (the lookup's own history row holds the same).
    Lookup { object_id: String, lookup: Value },
    /// The provider's signed event `webhook_event_id` reported `object_id` final.
    Webhook {
        object_id: String,
        webhook_event_id: String,
    },
    /// An operator resolved the operation as succeeded, stating `evidence`.
    Operator {
        object_id: Option<String>,
        evidence: String,
    },
}

impl Confirmation {
    /// `answer`, `lookup`, `webhook` or `operator`.
    pub fn by(&self) -> &'static str {
        match self {
            Confirmation::Answer { .. } => "answer",
            Confirmation::Lookup { .. } => "lookup",
            Confirmation::Webhook { .. } => "webhook",
            Confirmation::Operator { .. } => "operator",
        }
    }

    /// The provider's object it names, if any (an operator may know none).
    pub fn object_id(&self) -> Option<&str> {
        match self {
            Confirmation::Answer { object_id, .. }
            | Confirmation::Lookup { object_id, .. }
            | Confirmation::Webhook { object_id, .. } => Some(object_id),
            Confirmation::Operator { object_id, .. } => object_id.as_deref(),
        }
    }

    /// The `confirmed` member of the move's history row, and the view's `confirmation`.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("a confirmation serialises")
    }

    /// `evidence` (a history row's, if any) with this confirmation added as `confirmed`;
    /// evidence that is not an object is kept under `evidence`.
    pub fn into_evidence(&self, evidence: Option<Value>) -> Value {
        let mut out = match evidence {
            Some(Value::Object(map)) => map,
            None | Some(Value::Null) => serde_json::Map::new(),
            Some(other) => {
                let mut m = serde_json::Map::new();
                m.insert("evidence".to_owned(), other);
                m
            }
        };
        out.insert("confirmed".to_owned(), self.to_json());
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_confirmation_names_how_and_what() {
        let answer = Confirmation::Answer {
            object_id: "pay_1".into(),
            fence: 2,
            provider_request_id: Some("req_9".into()),
        };
        assert_eq!(
            answer.to_json(),
            json!({"by": "answer", "object_id": "pay_1", "fence": 2, "provider_request_id": "req_9"})
        );
        let hook = Confirmation::Webhook {
            object_id: "pay_1".into(),
            webhook_event_id: "evt_1".into(),
        };
        assert_eq!(
            hook.to_json(),
            json!({"by": "webhook", "object_id": "pay_1", "webhook_event_id": "evt_1"})
        );
        let person = Confirmation::Operator {
            object_id: None,
            evidence: "bank statement line 4".into(),
        };
        assert_eq!(person.by(), "operator");
        assert_eq!(person.object_id(), None);
        assert_eq!(
            person.to_json(),
            json!({"by": "operator", "object_id": null, "evidence": "bank statement line 4"})
        );
    }

    #[test]
    fn it_reads_back_what_it_wrote_and_nothing_else() {
        let lookup = Confirmation::Lookup {
            object_id: "pay_1".into(),
            lookup: json!({"via": "reference"}),
        };
        let read: Confirmation = serde_json::from_value(lookup.to_json()).unwrap();
        assert_eq!(read, lookup);
        let mut more = lookup.to_json();
        more["extra"] = json!(1);
        assert!(serde_json::from_value::<Confirmation>(more).is_err());
        assert!(serde_json::from_value::<Confirmation>(json!({"by": "guess"})).is_err());
    }

    #[test]
    fn it_joins_the_history_rows_evidence() {
        let c = Confirmation::Lookup {
            object_id: "pay_1".into(),
            lookup: json!({"via": "reference"}),
        };
        let ev = c.into_evidence(Some(json!({"via": "reference", "found": ["pay_1"]})));
        assert_eq!(ev["found"], json!(["pay_1"]));
        assert_eq!(ev["confirmed"]["by"], "lookup");
        assert_eq!(c.into_evidence(None)["confirmed"]["object_id"], "pay_1");
        assert_eq!(
            c.into_evidence(Some(json!("text")))["evidence"],
            json!("text")
        );
    }
}
