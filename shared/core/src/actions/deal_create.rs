//! `crm.deal.create`: a new deal in the CRM, which has no idempotency keys and a
//! non-unique external id field: every claim searches by it (the operation id) before it
//! creates, and a deal found with it IS the effect.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::catalogue::{
    Action, ActionPayload, ActionSpec, Behaviour, Effect, ProviderName, Subject, Target, ToolText,
};
use crate::intent::payloads::{amount_minor, currency, identifier, text};
use crate::intent::proposal::Proposal;
use crate::intent::{check_id, check_money, check_text, IntentError};
use crate::money::format_amount;
use crate::outcome::{classify_deal_create, CallResult, Outcome};
use crate::reconcile::{read_search, Found, Reading};

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

impl ActionPayload for DealCreatePayload {
    type Proposal = Proposal<DealCreatePayload>;

    fn check(&self) -> Result<(), IntentError> {
        check_text("payload.name", &self.name)?;
        check_text("payload.stage", &self.stage)?;
        check_id("payload.owner_id", &self.owner_id)?;
        check_money(self.amount_minor, &self.currency)
    }

    fn describe(&self, _target: Option<&str>) -> Option<String> {
        let amount = format_amount(self.amount_minor, &self.currency)?;
        Some(format!(
            "Create deal \"{}\" worth {amount} at stage {}, owned by {}",
            self.name, self.stage, self.owner_id
        ))
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
    provider: ProviderName::Crm,
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
