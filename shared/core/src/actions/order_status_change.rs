//! `order.status.change`: move an order from one status to another at the orders
//! provider, only if it is still at the status the person approved (`from`). The
//! provider has no idempotency keys; the transition carries our `transition_ref` (the
//! operation id) and the order remembers the last one applied, which is how an uncertain
//! attempt is settled: at `to` with our ref, our transition happened; still at `from`, it
//! did not; anywhere else, someone else changed the order and a person decides.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::action_spec::{
    Action, ActionPayload, ActionSpec, Behaviour, Effect, Subject, Target, ToolText,
};
use crate::catalogue::provider_spec;
use crate::headline::Headline;
use crate::intent_error::IntentError;
use crate::intent_limits::MAX_TEXT_CHARS;
use crate::lookup::{Found, Lookup, Reading};
use crate::members::arguments::TargetedProposal;
use crate::members::checks::check_text;
use crate::members::schemas::text;
use crate::objects::{ObjectField, ObjectRef};
use crate::outcome::{
    classify_unkeyed_common, error_type, transport, unknown, CallResult, Outcome, Precondition,
};
use crate::Reason;

/// An order status: lower-case words joined by `_` (`paid`, `on_hold`).
pub const STATUS_PATTERN: &str = "^[a-z]+(_[a-z]+)*$";

/// `order.status.change`: move an order from the status it was read at to another.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct OrderStatusChangePayload {
    /// The order's status the change was decided on; the change is refused if the order
    /// is no longer there (a new proposal is needed then).
    #[schemars(schema_with = "status")]
    pub from: String,
    /// The status to move the order to; not `from`.
    #[schemars(schema_with = "status")]
    pub to: String,
    /// Why, as the orders provider records it.
    #[schemars(schema_with = "text")]
    pub reason: String,
}

fn status(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "minLength": 1, "maxLength": MAX_TEXT_CHARS, "pattern": STATUS_PATTERN})
}

fn is_status(s: &str) -> bool {
    !s.is_empty()
        && s.chars().count() <= MAX_TEXT_CHARS
        && s.split('_')
            .all(|word| !word.is_empty() && word.bytes().all(|b| b.is_ascii_lowercase()))
}

impl OrderStatusChangePayload {
    /// The order as our transition leaves it: at `to`, last moved by this operation.
    fn ours(&self, order: &Value, reference: &str) -> bool {
        order.get("status").and_then(Value::as_str) == Some(self.to.as_str())
            && order.get("last_transition_ref").and_then(Value::as_str) == Some(reference)
    }
}

impl ActionPayload for OrderStatusChangePayload {
    type Proposal = TargetedProposal<OrderStatusChangePayload>;

    fn check(&self) -> Result<(), IntentError> {
        for (field, value) in [("payload.from", &self.from), ("payload.to", &self.to)] {
            if !is_status(value) {
                return Err(IntentError::field(
                    field,
                    "must be an order status: lower-case words joined by _",
                ));
            }
        }
        if self.from == self.to {
            return Err(IntentError::field(
                "payload.to",
                "must differ from payload.from",
            ));
        }
        check_text("payload.reason", &self.reason)
    }

    /// The statuses are typed (`STATUS_PATTERN`); the reason is not said here.
    fn describe(&self, target: Option<&str>) -> Option<Headline> {
        Some(Headline::new(format!(
            "Move order {} from {} to {}",
            target?, self.from, self.to
        )))
    }

    /// `POST /v1/orders/<id>/transitions`: a 200 showing our transition applied is
    /// success; a 409 `status_conflict` is a new decision, except when the order is
    /// already at `to` with our `transition_ref` (then our transition happened).
    fn classify(&self, call: &CallResult, subject: &Subject<'_>) -> Outcome {
        let answer = match transport(call) {
            Ok(answer) => answer,
            Err(outcome) => return outcome,
        };
        let order_id = || subject.target.unwrap_or_default().to_owned();
        match answer.status {
            200 if self.ours(&answer.body, subject.reference) => Outcome::Succeeded {
                external_id: order_id(),
            },
            // A 2xx we cannot read proves the provider acted but not how: ask it.
            200..=299 => unknown(Reason::UnreadableSuccessBody),
            409 if error_type(&answer.body) == Some("status_conflict") => {
                let now = answer.body.get("error").cloned().unwrap_or(Value::Null);
                let as_order = json!({"status": now.get("current_status"), "last_transition_ref": now.get("last_transition_ref")});
                if self.ours(&as_order, subject.reference) {
                    Outcome::Succeeded {
                        external_id: order_id(),
                    }
                } else {
                    Outcome::Conflict {
                        on: Precondition::Status,
                        current: now
                            .get("current_status")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                    }
                }
            }
            _ => classify_unkeyed_common(answer),
        }
    }

    /// `GET /v1/orders/<id>`: at `to` with our ref, our transition happened; still at
    /// `from`, it did not; at `to` with another ref or at a third status, someone else
    /// changed the order: never a retry, a person decides.
    fn read_lookup(&self, subject: &Subject<'_>, via: &str, objects: &[Value]) -> Reading {
        let order_id = subject.target.unwrap_or_default();
        let Some(order) = objects.first() else {
            return Reading::ambiguous(
                Reason::OrderMissing,
                json!({"via": via, "order_id": order_id}),
            );
        };
        let status = order.get("status").and_then(Value::as_str);
        let ref_is_ours =
            order.get("last_transition_ref").and_then(Value::as_str) == Some(subject.reference);
        let lookup = if self.ours(order, subject.reference) {
            Lookup::Matches(vec![Found::Succeeded {
                external_id: order_id.to_owned(),
            }])
        } else if status == Some(self.from.as_str()) && !ref_is_ours {
            Lookup::Matches(vec![])
        } else {
            Lookup::Ambiguous(Reason::StatusMoved)
        };
        Reading::with_found(
            lookup,
            json!({"via": via, "order_id": order_id, "status": status, "from": self.from, "to": self.to, "last_transition_is_ours": ref_is_ours}),
        )
    }
}

pub const SPEC: ActionSpec = ActionSpec {
    action: Action::OrderStatusChange,
    wire_name: "order.status.change",
    provider: provider_spec::ORDERS.name,
    target: Target::Required("the order id"),
    effect: Effect::ConditionalUpdate,
    has_amount: false,
    payee: None,
    objects: &[ObjectRef {
        kind: "order",
        field: ObjectField::Target,
        recorded_by: &[Action::OrderStatusChange],
    }],
    webhook: None,
    tool: ToolText {
        name: "order_status_change",
        title: "Propose an order status change",
        what:
            "Propose moving an order from one status to another (order.status.change at the orders \
               provider). The change applies only if the order is still at payload.from when it is \
               executed; otherwise it is cancelled and a new proposal (with supersedes) is needed.",
    },
    behaviour: Behaviour::of::<OrderStatusChangePayload>(),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::NoAnswerKind;

    const OP: &str = "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8";

    fn payload() -> Value {
        json!({"from": "paid", "to": "fulfilled", "reason": "shipped by carrier"})
    }

    fn change() -> OrderStatusChangePayload {
        serde_json::from_value(payload()).unwrap()
    }

    fn answer(status: u16, body: Value) -> CallResult {
        crate::outcome::answer(status, false, body)
    }

    fn classify(call: &CallResult) -> Outcome {
        let p = payload();
        change().classify(
            call,
            &Subject {
                reference: OP,
                target: Some("ord_1"),
                payload: &p,
            },
        )
    }

    fn read(order: Option<Value>) -> Lookup {
        let p = payload();
        let objects: Vec<Value> = order.into_iter().collect();
        change()
            .read_lookup(
                &Subject {
                    reference: OP,
                    target: Some("ord_1"),
                    payload: &p,
                },
                "order",
                &objects,
            )
            .lookup
    }

    fn conflict(current: &str, last: &str) -> Value {
        json!({"error": {"type": "status_conflict", "current_status": current, "last_transition_ref": last}})
    }

    #[test]
    fn the_transition_applied_is_success_with_the_order_as_the_effect() {
        let moved =
            json!({"id": "ord_1", "status": "fulfilled", "version": 4, "last_transition_ref": OP});
        assert_eq!(
            classify(&answer(200, moved)),
            Outcome::Succeeded {
                external_id: "ord_1".into()
            }
        );
        let odd = json!({"id": "ord_1", "status": "paid", "version": 4, "last_transition_ref": "op_other"});
        assert!(matches!(
            classify(&answer(200, odd)),
            Outcome::Unknown {
                escalate: false,
                ..
            }
        ));
    }

    #[test]
    fn a_status_conflict_is_a_new_decision_unless_the_order_is_at_to_with_our_ref() {
        assert_eq!(
            classify(&answer(409, conflict("fulfilled", OP))),
            Outcome::Succeeded {
                external_id: "ord_1".into()
            }
        );
        assert_eq!(
            classify(&answer(409, conflict("shipped", "op_other"))),
            Outcome::Conflict {
                on: Precondition::Status,
                current: Some("shipped".into())
            }
        );
        assert_eq!(
            classify(&answer(409, conflict("fulfilled", "op_other"))),
            Outcome::Conflict {
                on: Precondition::Status,
                current: Some("fulfilled".into())
            }
        );
        assert_eq!(
            Outcome::Conflict {
                on: Precondition::Status,
                current: None
            }
            .label(),
            "status_conflict"
        );
    }

    #[test]
    fn no_complete_answer_is_unknown_and_refusals_in_front_are_not_executed() {
        for kind in [NoAnswerKind::Timeout, NoAnswerKind::Reset] {
            assert!(matches!(
                classify(&CallResult::NoAnswer { kind }),
                Outcome::Unknown { .. }
            ));
        }
        assert!(matches!(
            classify(&answer(500, Value::Null)),
            Outcome::Unknown { .. }
        ));
        assert!(matches!(
            classify(&answer(429, Value::Null)),
            Outcome::NotExecuted { .. }
        ));
        let missing = json!({"error": {"type": "invalid_request", "code": "resource_missing"}});
        assert_eq!(
            classify(&answer(404, missing)),
            Outcome::Failed {
                code: "resource_missing".into()
            }
        );
    }

    #[test]
    fn a_lookup_decides_from_the_order() {
        let at = |status: &str, last: &str| {
            Some(
                json!({"id": "ord_1", "status": status, "version": 3, "last_transition_ref": last}),
            )
        };
        assert_eq!(
            read(at("fulfilled", OP)),
            Lookup::Matches(vec![Found::Succeeded {
                external_id: "ord_1".into()
            }])
        );
        assert_eq!(read(at("paid", "op_earlier")), Lookup::Matches(vec![]));
        assert_eq!(
            read(at("fulfilled", "op_other")),
            Lookup::Ambiguous(Reason::StatusMoved)
        );
        assert_eq!(
            read(at("shipped", OP)),
            Lookup::Ambiguous(Reason::StatusMoved)
        );
        assert_eq!(read(None), Lookup::Ambiguous(Reason::OrderMissing));
    }

    #[test]
    fn statuses_are_lower_case_words_and_the_change_goes_somewhere() {
        assert!(change().check().is_ok());
        for bad in [
            "", "Paid", "paid now", "paid-now", "_paid", "paid_", "on__hold", "pa1d",
        ] {
            let p = OrderStatusChangePayload {
                from: bad.into(),
                ..change()
            };
            assert!(p.check().is_err(), "{bad:?}");
        }
        assert!(OrderStatusChangePayload {
            from: "on_hold".into(),
            ..change()
        }
        .check()
        .is_ok());
        assert!(OrderStatusChangePayload {
            to: "paid".into(),
            ..change()
        }
        .check()
        .is_err());
    }

    #[test]
    fn the_approver_reads_the_move() {
        assert_eq!(
            change()
                .describe(Some("ord_1"))
                .map(|h| h.plain())
                .as_deref(),
            Some("Move order ord_1 from paid to fulfilled")
        );
        assert_eq!(change().describe(None), None);
    }
}
