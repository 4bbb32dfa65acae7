//! `POST /v1/mandates/coverage`: "am I covered?". An agent (or anyone who may read
//! operations) asks whether a standing mandate would approve an intent it has not sent
//! yet: the action, the payee, the amount and the currency, or the whole intent. The
//! answer is `fleet_core::mandate::coverage`'s, over the caller's tenant's mandates as
//! stored now and the policy rule in force (read with the owner's rights,
//! `fleet_mandate_rule`): yes with the mandate and what is left of it after, or no with
//! the reason. Read-only: nothing is reserved, and the claim judges again.
//!
//! The MCP tools `list_mandates` and `mandate_coverage` answer through the same
//! functions.

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use fleet_core::mandate::coverage::{coverage, PayeeFacts, Subject};
use fleet_core::mandate::Mandate;
use fleet_core::{Action, ApiAction, Role};
use fleet_store::{MandateRow, Principal};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::json_body::JsonBody;
use crate::problem::Problem;
use crate::route_responses::{BodyTooLarge, NotJson, PostgresSilent, RateLimited, Unauthenticated};
use crate::state::AppState;

/// The most mandates one answer judges (newest first), as `GET /v1/mandates` lists.
const MANDATES_JUDGED: i64 = 100;

/// A would-be intent: its action, payee, amount and currency, or the whole intent.
#[derive(Debug, Default, Deserialize, ToSchema, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CoverageQuestion {
    /// The tenant acted for; may be left out by a caller granted exactly one.
    #[serde(default)]
    pub tenant_id: Option<String>,
    /// The action, e.g. payment.create.
    #[serde(default)]
    pub action: Option<String>,
    /// The payee's id (a payment's beneficiary_id).
    #[serde(default)]
    pub payee: Option<String>,
    /// The amount in minor units.
    #[serde(default)]
    pub amount_minor: Option<i64>,
    /// ISO 4217 code.
    #[serde(default)]
    pub currency: Option<String>,
    /// A whole intent.v1 instead: the members above are read from it.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub intent: Option<Value>,
}

/// The answer, as the OpenAPI document describes it: documented, never built (the route
/// answers with what `fleet_core::mandate::coverage::Coverage::to_json` makes, plus the
/// tenant and action), so that a generated client reads it as a typed value.
#[derive(serde::Serialize, ToSchema)]
#[allow(dead_code)]
pub struct CoverageAnswer {
    /// Whether a mandate would approve the intent without a person.
    covered: bool,
    tenant_id: String,
    action: String,
    /// The mandate that would approve it, or (not covered) the one that came closest.
    mandate_id: Option<String>,
    /// Not covered: why (docs/mandates.md#what-an-agent-sees).
    reason: Option<String>,
    /// Covered: what the mandate would have left of its budget after it.
    available_after_minor: Option<i64>,
    /// Covered: how many more operations it could approve after it.
    count_left_after: Option<i64>,
    /// `policy_band_needs_a_person`: the amount from which a person approves.
    from_amount_minor: Option<i64>,
    /// Covered: what only intake can judge (the payee's account, risk cues).
    conditions: Option<Vec<String>>,
}

fn invalid(field: &str) -> ApiError {
    ApiError::Invalid {
        code: "invalid_field",
        field: Some(field.to_owned()),
    }
}

/// The question's members, from the intent when one is given.
struct Asked {
    tenant_id: Option<String>,
    action: Action,
    payee: Option<String>,
    amount_minor: i64,
    currency: String,
}

fn asked(q: &CoverageQuestion) -> Result<Asked, ApiError> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    let (tenant, action, payee, amount, currency, base) = match &q.intent {
        Some(intent) => {
            let action = text(intent.get("action"));
            let payload = intent.get("payload");
            let payee_member = action
                .as_deref()
                .and_then(Action::parse)
                .and_then(|a| a.spec().payee);
            (
                text(intent.get("tenant_id")),
                action,
                payee_member.and_then(|m| text(payload.and_then(|p| p.get(m)))),
                payload
                    .and_then(|p| p.get("amount_minor"))
                    .and_then(Value::as_i64),
                text(payload.and_then(|p| p.get("currency"))),
                "intent.",
            )
        }
        None => (
            q.tenant_id.clone(),
            q.action.clone(),
            q.payee.clone(),
            q.amount_minor,
            q.currency.clone(),
            "",
        ),
    };
    let at = |member: &str| invalid(&format!("{base}{member}"));
    let action = action
        .as_deref()
        .and_then(Action::parse)
        .ok_or_else(|| at("action"))?;
    let amount_minor = amount.filter(|a| *a >= 1).ok_or_else(|| {
        at(if base.is_empty() {
            "amount_minor"
        } else {
            "payload.amount_minor"
        })
    })?;
    let currency = currency
        .filter(|c| fleet_core::currency::is_iso_4217(c))
        .ok_or_else(|| {
            at(if base.is_empty() {
                "currency"
            } else {
                "payload.currency"
            })
        })?;
    Ok(Asked {
        tenant_id: tenant,
        action,
        payee,
        amount_minor,
        currency,
    })
}

/// The tenant a question is about: the one named (which must be the caller's), else
/// the caller's only one.
fn tenant_of(principal: &Principal, named: Option<String>) -> Result<String, ApiError> {
    match named {
        Some(t) if principal.tenants.contains(&t) => Ok(t),
        Some(_) => Err(ApiError::Forbidden("tenant_not_granted")),
        None => match principal.tenants.as_slice() {
            [one] => Ok(one.clone()),
            _ => Err(invalid("tenant_id")),
        },
    }
}

/// Whether `principal` may see a mandate: people of its tenant all of them; an agent
/// only those for it or for anyone (as `GET /v1/mandates` shows them).
fn visible_to(principal: &Principal, row: &MandateRow) -> bool {
    principal.role != Role::Agent
        || row
            .statement
            .get("for_principal")
            .and_then(Value::as_str)
            .is_none_or(|p| p == principal.name)
}

/// The mandates of `tenants` that `principal` may see, newest first.
pub(crate) async fn visible_mandates(
    state: &AppState,
    principal: &Principal,
    tenants: &[String],
) -> Result<Vec<MandateRow>, ApiError> {
    Ok(state
        .store
        .mandates(tenants, MANDATES_JUDGED)
        .await?
        .into_iter()
        .filter(|r| visible_to(principal, r))
        .collect())
}

/// The mandates the caller may see, each as `GET /v1/mandates` shows it.
pub(crate) async fn list(state: &AppState, principal: &Principal) -> Result<Value, ApiError> {
    let now = chrono::Utc::now();
    let rows = visible_mandates(state, principal, &principal.tenants).await?;
    let views: Vec<Value> = rows.iter().map(|r| r.to_view(now)).collect();
    Ok(json!({ "mandates": views }))
}

/// Answers the question `q` for `principal`: the route's work and the MCP tool's.
pub(crate) async fn judge(
    state: &AppState,
    principal: &Principal,
    q: &CoverageQuestion,
) -> Result<Value, ApiError> {
    let a = asked(q)?;
    let tenant = tenant_of(principal, a.tenant_id.clone())?;
    let rows = visible_mandates(state, principal, std::slice::from_ref(&tenant)).await?;
    // A stored statement this build cannot read approves nothing here, as at claim.
    let mandates: Vec<(Mandate, fleet_core::mandate::MandateStanding)> = rows
        .iter()
        .filter_map(|r| {
            Mandate::from_json(&r.statement)
                .ok()
                .map(|m| (m, r.standing))
        })
        .collect();
    let rule = state.store.mandate_rule(&tenant, a.action).await?;
    let subject = Subject {
        tenant_id: &tenant,
        action: a.action,
        amount_minor: Some(a.amount_minor),
        currency: Some(&a.currency),
        submitted_by: Some(&principal.name),
        payee: a
            .payee
            .as_deref()
            .map_or(PayeeFacts::Unknown, PayeeFacts::Named),
    };
    let answer = coverage(&mandates, rule.as_ref(), &subject, chrono::Utc::now());
    let mut v = answer.to_json();
    v["tenant_id"] = json!(tenant);
    v["action"] = json!(a.action.wire_name());
    Ok(v)
}

/// Would a standing mandate approve this intent? ("am I covered?")
///
/// Judges a would-be intent (its `action`, `payee`, `amount_minor`, `currency`, or the
/// whole `intent`) against the caller's tenant's mandates that apply to the caller and
/// the policy in force, by the same rule execute's claim applies. Answers `{"covered":
/// true, "mandate_id", "available_after_minor", "count_left_after", "conditions"}` (what
/// intake still judges: the payee's account, risk cues) or `{"covered": false, "reason",
/// "mandate_id"}` with `reason` one of `no_active_mandate`, `revoked`, `outside_window`,
/// `other_currency`, `above_per_operation_max`, `payee_not_allowed`,
/// `over_remaining_budget`, `over_remaining_count`, `no_policy_in_force`,
/// `policy_allows_no_mandate`, `policy_band_needs_a_person` (with `from_amount_minor`).
/// Nothing is reserved.
#[utoipa::path(
    post,
    path = "/v1/mandates/coverage",
    tag = "mandates",
    request_body(content = CoverageQuestion, content_type = "application/json"),
    responses(
        (status = 200, description = "The answer: covered or not, and by which mandate or why not.", body = CoverageAnswer),
        Unauthenticated,
        (status = 403, description = "`tenant_not_granted`.", body = Problem, content_type = "application/problem+json"),
        BodyTooLarge,
        NotJson,
        (status = 422, description = "`malformed`, or `invalid_field` naming the member at fault (`action`, `amount_minor`, `currency`, `tenant_id` for a caller of several tenants).", body = Problem, content_type = "application/problem+json"),
        RateLimited,
        PostgresSilent,
    ),
    security(("bearer" = []))
)]
pub async fn mandate_coverage(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    caller.may(ApiAction::ReadOperations)?;
    let JsonBody(q): JsonBody<CoverageQuestion> = JsonBody::read(&headers, body).await?;
    judge(&state, &caller.0, &q).await.map(Json)
}
