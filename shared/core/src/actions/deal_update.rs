//! `crm.deal.update`: change fields of a deal, only if it is still at the version the
//! person approved (`If-Match`). A 412 is a new decision, never a retry; a lookup proves
//! the change happened when the deal moved exactly one version and holds the values.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::action_spec::{
    Action, ActionPayload, ActionSpec, Behaviour, Effect, Subject, Target, ToolText,
};
use crate::catalogue::provider_spec;
use crate::headline::Headline;
use crate::intent_error::IntentError;
use crate::intent_limits::MAX_SAFE_INTEGER;
use crate::json_words::value_in_words;
use crate::lookup::{Found, Lookup, Reading};
use crate::members::arguments::TargetedProposal;
use crate::members::schemas::{patch, version};
use crate::objects::{ObjectField, ObjectRef};
use crate::outcome::{
    classify_unkeyed_common, transport, unknown, CallResult, Outcome, Precondition,
};
use crate::Reason;

/// `crm.deal.update`: change fields of a deal, only if it is still at the version read.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct DealUpdatePayload {
    /// The deal's version the change was decided on; the update is refused if the deal
    /// moved on meanwhile (a new proposal is needed then).
    #[schemars(schema_with = "version")]
    pub expected_version: i64,
    /// The fields to set, at least one. Numbers here may be any double (0.35, 1e21).
    #[schemars(schema_with = "patch")]
    pub patch: Map<String, Value>,
}

/// `PATCH /v1/deals/<id>` with `If-Match`: a 412 is a version conflict, never retried.
pub fn classify_deal_update(call: &CallResult) -> Outcome {
    let answer = match transport(call) {
        Ok(a) => a,
        Err(o) => return o,
    };
    match (answer.status, answer.body.get("id").and_then(Value::as_str)) {
        (200, Some(id)) => Outcome::Succeeded {
            external_id: id.to_owned(),
        },
        (200, None) => unknown(Reason::UnreadableSuccessBody),
        (412, _) => Outcome::Conflict {
            on: Precondition::Version,
            current: answer
                .body
                .pointer("/error/current_version")
                .and_then(Value::as_i64)
                .map(|v| v.to_string()),
        },
        _ => classify_unkeyed_common(answer),
    }
}

impl ActionPayload for DealUpdatePayload {
    type Proposal = TargetedProposal<DealUpdatePayload>;

    fn check(&self) -> Result<(), IntentError> {
        if !(1..=MAX_SAFE_INTEGER).contains(&self.expected_version) {
            return Err(IntentError::field(
                "payload.expected_version",
                "must be a positive integer",
            ));
        }
        if self.patch.is_empty() {
            return Err(IntentError::field(
                "payload.patch",
                "must set at least one field",
            ));
        }
        Ok(())
    }

    /// A patch's member names and values are the agent's own: the sentence counts them,
    /// and the changes follow it quoted.
    fn describe(&self, target: Option<&str>) -> Option<Headline> {
        if self.patch.is_empty() {
            return None;
        }
        let fields = match self.patch.len() {
            1 => "1 field".to_owned(),
            n => format!("{n} fields"),
        };
        Some(
            Headline::new(format!(
                "Update deal {} at version {}, changing {fields}",
                target?, self.expected_version,
            ))
            .quoting("changes", patch_in_words(&self.patch)),
        )
    }

    fn classify(&self, call: &CallResult, _subject: &Subject<'_>) -> Outcome {
        classify_deal_update(call)
    }

    /// The change took effect iff the deal moved exactly one version past the approved
    /// one and holds the approved values; still at the approved version, it did not.
    fn read_lookup(&self, subject: &Subject<'_>, via: &str, objects: &[Value]) -> Reading {
        let deal_id = subject.target.unwrap_or_default();
        let Some(deal) = objects.first() else {
            return Reading::ambiguous(
                Reason::DealMissing,
                json!({"via": via, "deal_id": deal_id}),
            );
        };
        let version = deal.get("version").and_then(Value::as_i64);
        let applied = self.patch.iter().all(|(k, v)| deal.get(k) == Some(v));
        let lookup = match version {
            Some(v) if v == self.expected_version => Lookup::Matches(vec![]),
            Some(v) if v == self.expected_version + 1 && applied => {
                Lookup::Matches(vec![Found::Succeeded {
                    external_id: deal_id.to_owned(),
                }])
            }
            _ => Lookup::Ambiguous(Reason::VersionMoved),
        };
        let evidence = json!({"via": via, "deal_id": deal_id, "version": version, "expected_version": self.expected_version});
        Reading::with_found(lookup, evidence)
    }
}

/// `amount_minor to 5000, stage to "won"`, members sorted by name (the canonical
/// order, whatever order the map keeps).
fn patch_in_words(patch: &Map<String, Value>) -> String {
    let mut members: Vec<(&String, &Value)> = patch.iter().collect();
    members.sort_by(|a, b| a.0.cmp(b.0));
    let changes: Vec<String> = members
        .into_iter()
        .map(|(k, v)| format!("{k} to {}", value_in_words(v)))
        .collect();
    changes.join(", ")
}

pub const SPEC: ActionSpec = ActionSpec {
    action: Action::CrmDealUpdate,
    wire_name: "crm.deal.update",
    provider: provider_spec::CRM.name,
    target: Target::Required("the deal id"),
    effect: Effect::ConditionalUpdate,
    has_amount: false,
    payee: None,
    objects: &[ObjectRef {
        kind: "deal",
        field: ObjectField::Target,
        recorded_by: &[Action::CrmDealCreate, Action::CrmDealUpdate],
    }],
    webhook: None,
    tool: ToolText {
        name: "crm_deal_update",
        title: "Propose a CRM deal change",
        what: "Propose changing fields of a CRM deal (crm.deal.update). The change applies only if the deal \
               is still at payload.expected_version when it is executed; otherwise it is cancelled and a new \
               proposal (with supersedes) is needed.",
    },
    behaviour: Behaviour::of::<DealUpdatePayload>(),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::answer;

    fn subject(payload: &Value) -> Subject<'_> {
        Subject {
            reference: "op_1",
            target: Some("deal_1"),
            payload,
        }
    }

    #[test]
    fn a_lookup_proves_the_change_only_one_version_on_with_the_values() {
        let payload = json!({"expected_version": 3, "patch": {"stage": "won"}});
        let p: DealUpdatePayload = serde_json::from_value(payload.clone()).unwrap();
        let read = |deal: Value| p.read_lookup(&subject(&payload), "deal", &[deal]).lookup;
        assert_eq!(
            read(json!({"id": "deal_1", "version": 3, "stage": "proposal"})),
            Lookup::Matches(vec![])
        );
        assert_eq!(
            read(json!({"id": "deal_1", "version": 4, "stage": "won"})),
            Lookup::Matches(vec![Found::Succeeded {
                external_id: "deal_1".into()
            }])
        );
        assert_eq!(
            read(json!({"id": "deal_1", "version": 4, "stage": "lost"})),
            Lookup::Ambiguous(Reason::VersionMoved)
        );
        assert_eq!(
            read(json!({"id": "deal_1", "version": 6, "stage": "won"})),
            Lookup::Ambiguous(Reason::VersionMoved)
        );
        assert_eq!(
            p.read_lookup(&subject(&payload), "deal", &[]).lookup,
            Lookup::Ambiguous(Reason::DealMissing)
        );
    }

    #[test]
    fn a_412_on_a_deal_update_is_a_conflict_with_the_current_version() {
        let conflict = json!({"error": {"type": "version_conflict", "current_version": 4}});
        assert_eq!(
            classify_deal_update(&answer(412, false, conflict)),
            Outcome::Conflict {
                on: Precondition::Version,
                current: Some("4".into())
            }
        );
        assert_eq!(
            classify_deal_update(&answer(200, false, json!({"id": "deal_1", "version": 4}))),
            Outcome::Succeeded {
                external_id: "deal_1".into()
            }
        );
        assert!(matches!(
            classify_deal_update(&answer(503, false, Value::Null)),
            Outcome::Unknown { .. }
        ));
        assert!(matches!(
            classify_deal_update(&CallResult::NotSent {
                detail: "refused".into()
            }),
            Outcome::NotExecuted { .. }
        ));
    }
}
