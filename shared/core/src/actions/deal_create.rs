//! `crm.deal.create`: a new deal in the CRM, which has no idempotency keys and a
//! non-unique external id field: every claim searches by it (the operation id) before it
//! creates, and a deal found with it IS the effect.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::action_spec::{
    Action, ActionPayload, ActionSpec, Behaviour, Effect, Subject, Target, ToolText,
};
use crate::actions::search::read_search;
use crate::catalogue::provider_spec;
use crate::headline::Headline;
use crate::intent_error::IntentError;
use crate::lookup::{Found, Reading};
use crate::members::arguments::Proposal;
use crate::members::checks::{check_id, check_money, check_text};
use crate::members::schemas::{amount_minor, currency, identifier, text};
use crate::money::format_amount;
use crate::outcome::{classify_unkeyed_common, transport, unknown, CallResult, Outcome};
use crate::Reason;

/// `crm.deal.create`: a new deal in the CRM.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct DealCreatePayload {
    #[schemars(schema_with = "text")]
    pub name: String,
    /// The deal's value in the currency's minor unit, an integer.
    #[schemars(schema_with = "amount_minor")]
    pub amount_minor: i64,
    /// An active ISO 4217 code, upper case.
    #[schemars(schema_with = "currency")]
    pub currency: String,
    /// The pipeline stage, e.g. `proposal`.
    #[schemars(schema_with = "text")]
    pub stage: String,
    /// The CRM user who owns the deal.
    #[schemars(schema_with = "identifier")]
    pub owner_id: String,
}

/// Deals carry no status: one that carries our external id is the effect.
fn deal_found(deal: &Value) -> Option<Found> {
    Some(Found::Succeeded {
        external_id: deal.get("id")?.as_str()?.to_owned(),
    })
}

/// `POST /v1/deals` (the reference CRM API): no idempotency key, so anything but a complete
/// answer is unknown and only a search by external id may settle it.
pub fn classify_deal_create(call: &CallResult) -> Outcome {
    let answer = match transport(call) {
        Ok(a) => a,
        Err(o) => return o,
    };
    match (answer.status, answer.body.get("id").and_then(Value::as_str)) {
        (200 | 201, Some(id)) => Outcome::Succeeded {
            external_id: id.to_owned(),
        },
        (200 | 201, None) => unknown(Reason::UnreadableSuccessBody),
        (202, id) => Outcome::Accepted {
            external_id: id.map(str::to_owned),
        },
        _ => classify_unkeyed_common(answer),
    }
}

impl ActionPayload for DealCreatePayload {
    type Proposal = Proposal<DealCreatePayload>;

    fn check(&self) -> Result<(), IntentError> {
        check_text("payload.name", &self.name)?;
        check_text("payload.stage", &self.stage)?;
        check_id("payload.owner_id", &self.owner_id)?;
        check_money(self.amount_minor, &self.currency)
    }

    /// The name and the stage are free text: quoted after the sentence (amount and
    /// owner first), never inside it.
    fn describe(&self, _target: Option<&str>) -> Option<Headline> {
        let amount = format_amount(self.amount_minor, &self.currency)?;
        Some(
            Headline::new(format!(
                "Create a deal worth {amount}, owned by {}",
                self.owner_id
            ))
            .quoting("name", &*self.name)
            .quoting("stage", &*self.stage),
        )
    }

    fn classify(&self, call: &CallResult, _subject: &Subject<'_>) -> Outcome {
        classify_deal_create(call)
    }

    fn read_lookup(&self, subject: &Subject<'_>, via: &str, objects: &[Value]) -> Reading {
        read_search(subject, via, objects, "external_id", deal_found)
    }
}

pub const SPEC: ActionSpec = ActionSpec {
    action: Action::CrmDealCreate,
    wire_name: "crm.deal.create",
    provider: provider_spec::CRM.name,
    target: Target::Optional,
    effect: Effect::SearchedCreate,
    has_amount: true,
    payee: Some("owner_id"),
    objects: &[],
    webhook: None,
    tool: ToolText {
        name: "crm_deal_create",
        title: "Propose a CRM deal",
        what: "Propose creating a deal in the CRM (crm.deal.create).",
    },
    behaviour: Behaviour::of::<DealCreatePayload>(),
};

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::outcome::{answer, NoAnswerKind};

    #[test]
    fn deal_creates_succeed_queue_or_stay_unknown() {
        assert_eq!(
            classify_deal_create(&answer(201, false, json!({"id": "deal_1", "version": 1}))),
            Outcome::Succeeded {
                external_id: "deal_1".into()
            }
        );
        assert_eq!(
            classify_deal_create(&answer(202, false, json!({"status": "queued"}))),
            Outcome::Accepted { external_id: None }
        );
        assert!(matches!(
            classify_deal_create(&answer(500, false, Value::Null)),
            Outcome::Unknown { .. }
        ));
        assert!(matches!(
            classify_deal_create(&CallResult::NoAnswer {
                kind: NoAnswerKind::Timeout
            }),
            Outcome::Unknown { .. }
        ));
        let invalid = json!({"error": {"type": "invalid_request", "code": "parameter_invalid"}});
        assert_eq!(
            classify_deal_create(&answer(400, false, invalid)),
            Outcome::Failed {
                code: "parameter_invalid".into()
            }
        );
    }
}
