//! Standing mandates in the console: the tenant's mandates with what each has used and
//! what is left (or revoked), one mandate's page with its revoke button (its signer or an
//! admin), and the form an approver composes one with. The form is read into a mandate by
//! `fleet_core::mandate_form`; the next page shows it in the words core writes for the
//! statement, and the approver's passkey signs the statement's canonical bytes (their
//! SHA-256 is the WebAuthn challenge). Storing and revoking go through the functions of
//! the JSON routes (`crate::mandates`): the same signature check with the registered key,
//! the same owner-rights database functions.
//!
//! | route | what |
//! |---|---|
//! | `GET /console/mandates` | the mandates of my tenants, newest first |
//! | `GET /console/mandates/new` | compose a mandate (approvers) |
//! | `POST /console/mandates/review` | the mandate in words, and the passkey that signs it |
//! | `POST /console/mandates` | store the signed mandate |
//! | `GET /console/mandates/{id}` | one mandate: what was signed, used, left |
//! | `POST /console/mandates/{id}/revoke` | revoke it (its signer, or an admin) |

use std::sync::Arc;

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use chrono::{DateTime, Utc};
use fleet_core::approval_statement::format_expiry;
use fleet_core::catalogue::Action;
use fleet_core::mandate::{may_be_mandated, Mandate, MandatePayees};
use fleet_core::mandate_form::MandateForm;
use fleet_core::money::format_amount;
use fleet_core::payee::PayeeEvidence;
use fleet_core::visible::reveal;
use fleet_core::{ApiAction, Role};
use fleet_store::{MandateRow, OperationSearch};
use serde::Deserialize;
use serde_json::Value;

use super::form_fields::FormFields;
use super::handler::html;
use super::handler::ConsoleState;
use super::pages::{error_page, Banner};
use super::passkey_sign::{PasskeyAnswer, PasskeyAsk};
use super::present::Me;
use super::session::Signed;
use super::setup::Console;
use crate::error::ApiError;
use crate::mandates::{revoke, store, MandateBody};
use crate::state::AppState;

/// The most mandates the list shows.
const LIST_ROWS: i64 = 100;

/// How long a new mandate stands unless the approver says otherwise.
const DEFAULT_DAYS: i64 = 30;

pub fn routes() -> Router<ConsoleState> {
    Router::new()
        .route("/console/mandates", get(list).post(create))
        .route("/console/mandates/new", get(new))
        .route("/console/mandates/review", post(review))
        .route("/console/mandates/{id}", get(one))
        .route("/console/mandates/{id}/revoke", post(revoke_form))
}

fn amount(minor: i64, currency: &str) -> String {
    format_amount(minor, currency).unwrap_or_else(|| format!("{minor} {currency}"))
}

/// One mandate as the list and its page show it.
pub struct MandateLine {
    pub id: String,
    pub tenant: String,
    /// `active`, `expired` or `revoked`.
    pub status: String,
    pub actions: String,
    pub payees: String,
    pub whose: String,
    pub per_operation_max: String,
    pub budget: String,
    pub spent: String,
    pub available: String,
    /// What a revocation took away, never spent; `None` while not revoked.
    pub revoked: Option<String>,
    pub used: String,
    pub valid: String,
    pub signed_by: String,
    pub revoked_by: Option<String>,
    /// The statement in core's words, as it was signed.
    pub words: String,
}

impl MandateLine {
    fn of(row: &MandateRow, now: DateTime<Utc>) -> MandateLine {
        let view = row.to_view(now);
        let n = |k: &str| view.get(k).and_then(Value::as_i64).unwrap_or(0);
        let c = &row.currency;
        let signed = Mandate::from_json(&row.statement).ok();
        let (actions, payees, whose, per_op, valid, words) = match &signed {
            Some(m) => (
                m.actions
                    .iter()
                    .map(|a| a.wire_name())
                    .collect::<Vec<_>>()
                    .join(", "),
                match &m.payees {
                    MandatePayees::AnyVerified => "any verified payee".to_owned(),
                    MandatePayees::Listed(l) => reveal(
                        &l.iter()
                            .map(|p| p.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    ),
                },
                m.for_principal
                    .as_deref()
                    .map_or("anyone's".to_owned(), reveal),
                amount(m.per_operation_max_minor, c),
                format!(
                    "{} – {}",
                    format_expiry(m.valid_from),
                    format_expiry(m.valid_until)
                ),
                reveal(&m.to_words()),
            ),
            None => (
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                "this build cannot read the statement".to_owned(),
            ),
        };
        MandateLine {
            id: row.mandate_id.clone(),
            tenant: reveal(&row.tenant_id),
            status: view["status"].as_str().unwrap_or_default().to_owned(),
            actions,
            payees,
            whose,
            per_operation_max: per_op,
            budget: amount(n("budget_minor"), c),
            spent: amount(n("spent_minor"), c),
            available: amount(n("available_minor"), c),
            revoked: row.revoked_at.map(|_| amount(n("revoked_minor"), c)),
            used: format!("{} of {}", n("used_count"), n("count_limit")),
            valid,
            signed_by: reveal(&row.signed_by),
            revoked_by: row.revoked_by.as_deref().map(reveal),
            words,
        }
    }
}

#[derive(Template)]
#[template(path = "console/mandates.html")]
struct ListPage {
    me: Me,
    items: Vec<MandateLine>,
    may_sign: bool,
}

#[derive(Template)]
#[template(path = "console/mandate.html")]
struct OnePage {
    me: Me,
    m: MandateLine,
    may_revoke: bool,
    banner: Option<Banner>,
}

/// The form's fields as the page shows them again.
#[derive(Default)]
struct Typed {
    tenant: String,
    actions: Vec<String>,
    any_verified_payee: bool,
    /// Every payee, ticked and typed.
    payees: String,
    /// The known payees ticked (`ID=sha256:…`).
    picked: Vec<String>,
    /// The payees typed.
    typed_payees: String,
    currency: String,
    per_operation_max: String,
    budget: String,
    count_limit: String,
    valid_from: String,
    valid_until: String,
    for_principal: String,
}

#[derive(Template)]
#[template(path = "console/mandate_new.html")]
struct NewPage {
    me: Me,
    tenants: Vec<String>,
    /// The actions a mandate may cover: (wire name, ticked).
    actions: Vec<(&'static str, bool)>,
    typed: Typed,
    /// Payees of the person's tenants' recent operations, to tick instead of typing.
    known: Vec<KnownPayee>,
    /// What is wrong with what was typed.
    problem: Option<String>,
}

/// A payee as the provider's directory last described it on one of the tenant's recent
/// operations: its id and the account it had then, which a mandate freezes.
pub struct KnownPayee {
    pub tenant: String,
    pub id: String,
    pub fingerprint: String,
    pub verified: bool,
    /// `ID=sha256:…`, as the form posts it.
    pub value: String,
    pub picked: bool,
}

/// How many recent operations the form reads payees from.
const RECENT_OPERATIONS: i64 = 200;

/// The payees (each with the account it was last seen with) of the latest operations of
/// `tenants`, newest first, each once per tenant.
async fn known_payees(
    state: &AppState,
    tenants: &[String],
    picked: &[String],
) -> Result<Vec<KnownPayee>, ApiError> {
    let ops = state
        .store
        .search_operations(tenants, OperationSearch::default(), RECENT_OPERATIONS)
        .await?;
    let mut known: Vec<KnownPayee> = Vec::new();
    for op in &ops {
        let found = op
            .row
            .payee
            .as_ref()
            .and_then(PayeeEvidence::from_json)
            .and_then(|e| e.found().cloned());
        let Some(p) = found else { continue };
        let tenant = op.row.tenant_id.clone();
        if known.iter().any(|k| k.tenant == tenant && k.id == p.id) {
            continue;
        }
        let value = format!("{}={}", p.id, p.account.fingerprint);
        known.push(KnownPayee {
            picked: picked.contains(&value),
            tenant: reveal(&tenant),
            id: reveal(&p.id),
            fingerprint: p.account.fingerprint.clone(),
            verified: p.verified,
            value,
        });
    }
    Ok(known)
}

#[derive(Template)]
#[template(path = "console/mandate_review.html")]
struct ReviewPage {
    me: Me,
    /// The statement in core's words.
    words: String,
    /// The statement as signed (RFC 8785 canonical JSON), posted back with the signature.
    statement: String,
    passkey: Option<PasskeyAsk>,
}

fn may_sign(signed: &Signed) -> bool {
    fleet_core::authz::may(&signed.principal.actor(), ApiAction::Approve).is_ok()
}

fn may_revoke(signed: &Signed, row: &MandateRow) -> bool {
    row.revoked_at.is_none()
        && match signed.principal.role {
            Role::Admin => true,
            Role::Approver => row.signed_by == signed.principal.name,
            _ => false,
        }
}

async fn list(State(state): State<AppState>, signed: Signed) -> Result<Response, ApiError> {
    let now = Utc::now();
    let rows = state
        .store
        .mandates(&signed.principal.tenants, LIST_ROWS)
        .await?;
    Ok(html(
        ListPage {
            me: signed.me(),
            items: rows.iter().map(|r| MandateLine::of(r, now)).collect(),
            may_sign: may_sign(&signed),
        }
        .render(),
    ))
}

#[derive(Debug, Default, Deserialize)]
struct DoneQuery {
    done: Option<String>,
}

async fn one(
    State(state): State<AppState>,
    signed: Signed,
    Path(id): Path<String>,
    Query(q): Query<DoneQuery>,
) -> Result<Response, ApiError> {
    let Some(row) = state.store.mandate(&id, &signed.principal.tenants).await? else {
        return Ok(not_found());
    };
    // A confirmation only for what the records say the person did.
    let me = &signed.principal.name;
    let banner = match q.done.as_deref() {
        Some("signed") if &row.signed_by == me => Some("You signed this mandate: it stands now."),
        Some("revoked") if row.revoked_by.as_ref() == Some(me) => {
            Some("You revoked this mandate: it approves nothing from now on.")
        }
        _ => None,
    }
    .map(|text| Banner {
        kind: "ok",
        text: text.to_owned(),
    });
    Ok(html(
        OnePage {
            me: signed.me(),
            may_revoke: may_revoke(&signed, &row),
            m: MandateLine::of(&row, Utc::now()),
            banner,
        }
        .render(),
    ))
}

fn not_found() -> Response {
    error_page(
        StatusCode::NOT_FOUND,
        "Not found",
        "No such mandate among your tenants.",
    )
}

fn not_a_signer() -> Response {
    error_page(
        StatusCode::FORBIDDEN,
        "Refused",
        "Only approvers sign mandates, with their own passkey.",
    )
}

fn stale_form() -> Response {
    error_page(
        StatusCode::FORBIDDEN,
        "Refused",
        "This form did not come from your console session; nothing was changed. Reload the page and try again.",
    )
}

fn mandatable() -> impl Iterator<Item = Action> {
    Action::ALL.into_iter().filter(|a| may_be_mandated(*a))
}

fn new_page(
    signed: &Signed,
    typed: Typed,
    known: Vec<KnownPayee>,
    problem: Option<String>,
) -> NewPage {
    NewPage {
        known,
        me: signed.me(),
        tenants: signed.principal.tenants.iter().map(|t| reveal(t)).collect(),
        actions: mandatable()
            .map(|a| {
                (
                    a.wire_name(),
                    typed.actions.iter().any(|t| t == a.wire_name()),
                )
            })
            .collect(),
        typed,
        problem,
    }
}

async fn new(State(state): State<AppState>, signed: Signed) -> Result<Response, ApiError> {
    if !may_sign(&signed) {
        return Ok(not_a_signer());
    }
    let until = Utc::now() + chrono::Duration::days(DEFAULT_DAYS);
    let typed = Typed {
        tenant: signed
            .principal
            .tenants
            .first()
            .cloned()
            .unwrap_or_default(),
        actions: vec![Action::PaymentCreate.wire_name().to_owned()],
        valid_until: until.format("%Y-%m-%dT%H:%M").to_string(),
        ..Typed::default()
    };
    let known = known_payees(&state, &signed.principal.tenants, &[]).await?;
    Ok(html(new_page(&signed, typed, known, None).render()))
}

fn form_token_ok(signed: &Signed, f: &FormFields) -> bool {
    signed.secret.form_token_matches(&f.one("form_token"))
}

async fn review(
    State(state): State<AppState>,
    State(console): State<Arc<Console>>,
    signed: Signed,
    body: Bytes,
) -> Result<Response, ApiError> {
    let f = FormFields::of(&body);
    if !form_token_ok(&signed, &f) {
        return Ok(stale_form());
    }
    if !may_sign(&signed) {
        return Ok(not_a_signer());
    }
    let typed = Typed {
        tenant: f.one("tenant"),
        actions: f.all("action"),
        any_verified_payee: f.one("payees_kind") == "any_verified",
        // The payees ticked, then those typed, one a line.
        payees: f
            .all("payee")
            .into_iter()
            .chain(std::iter::once(f.one("payees")))
            .collect::<Vec<_>>()
            .join("\n"),
        picked: f.all("payee"),
        typed_payees: f.one("payees"),
        currency: f.one("currency"),
        per_operation_max: f.one("per_operation_max"),
        budget: f.one("budget"),
        count_limit: f.one("count_limit"),
        valid_from: f.one("valid_from"),
        valid_until: f.one("valid_until"),
        for_principal: f.one("for_principal"),
    };
    let form = MandateForm {
        tenant_id: typed.tenant.clone(),
        actions: typed.actions.clone(),
        any_verified_payee: typed.any_verified_payee,
        payees: typed.payees.clone(),
        currency: typed.currency.clone(),
        per_operation_max: typed.per_operation_max.clone(),
        budget: typed.budget.clone(),
        count_limit: typed.count_limit.clone(),
        valid_from: typed.valid_from.clone(),
        valid_until: typed.valid_until.clone(),
        for_principal: typed.for_principal.clone(),
    };
    let id = format!("md_{}", ulid::Ulid::new());
    let mandate = match form.mandate(&id, Utc::now()) {
        Ok(m) if signed.principal.tenants.contains(&m.tenant_id) => Ok(m),
        Ok(_) => Err("tenant: not one of yours".to_owned()),
        Err(p) => Err(reveal(&p.to_string())),
    };
    let mandate = match mandate {
        Ok(m) => m,
        Err(problem) => {
            let known = known_payees(&state, &signed.principal.tenants, &typed.picked).await?;
            return Ok(refused_form(new_page(&signed, typed, known, Some(problem))));
        }
    };
    let bytes = mandate.to_bytes();
    let passkey = PasskeyAsk::of(&state, &console, &signed.principal.name, &bytes).await?;
    Ok(html(
        ReviewPage {
            me: signed.me(),
            words: reveal(&mandate.to_words()),
            statement: String::from_utf8(bytes).unwrap_or_default(),
            passkey,
        }
        .render(),
    ))
}

fn refused_form(page: NewPage) -> Response {
    let mut r = html(page.render());
    *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    r
}

#[derive(Debug, Default, Deserialize)]
struct SignedMandate {
    form_token: Option<String>,
    statement: Option<String>,
    #[serde(flatten)]
    answer: PasskeyAnswer,
}

/// A refusal of the JSON routes' functions in a person's words; `None` for what is no
/// refusal (the store failed: answered as the API answers it).
fn refusal(e: &ApiError) -> Option<(StatusCode, String)> {
    Some(match e {
        ApiError::BadSignature { field: "key_id" } => (
            StatusCode::BAD_REQUEST,
            "the passkey you signed with is not one registered for you (or it was removed)".into(),
        ),
        ApiError::BadSignature { .. } => (
            StatusCode::BAD_REQUEST,
            "the signature does not verify over this mandate's statement".into(),
        ),
        ApiError::Forbidden("not_recorded_approver") => (
            StatusCode::FORBIDDEN,
            "the deployment's records do not make you a live approver of this tenant with this key"
                .into(),
        ),
        ApiError::Forbidden(code) => (StatusCode::FORBIDDEN, format!("not allowed ({code})")),
        ApiError::NotFound => (
            StatusCode::NOT_FOUND,
            "no such mandate among your tenants".into(),
        ),
        ApiError::Invalid { field, .. } => (
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "the mandate's {} is not valid",
                field.as_deref().unwrap_or("statement")
            ),
        ),
        _ => return None,
    })
}

fn refused(e: ApiError) -> Result<Response, ApiError> {
    match refusal(&e) {
        Some((status, words)) => Ok(error_page(
            status,
            "Refused",
            &format!("Refused: {words}. Nothing was changed."),
        )),
        None => Err(e),
    }
}

async fn create(
    State(state): State<AppState>,
    signed: Signed,
    axum::Form(f): axum::Form<SignedMandate>,
) -> Result<Response, ApiError> {
    if !f
        .form_token
        .as_deref()
        .is_some_and(|t| signed.secret.form_token_matches(t))
    {
        return Ok(stale_form());
    }
    if !may_sign(&signed) {
        return Ok(not_a_signer());
    }
    let Some(statement) = f
        .statement
        .as_deref()
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
    else {
        return refused(ApiError::Invalid {
            code: "invalid_field",
            field: Some("statement".into()),
        });
    };
    let (key_id, signature) = f
        .answer
        .as_signature(&state, &signed.principal.name)
        .await?;
    let body = MandateBody {
        statement,
        key_id,
        signature,
    };
    match store(&state, &signed.principal, &body).await {
        Ok((_, view)) => {
            let id = view["mandate_id"].as_str().unwrap_or_default();
            Ok(Redirect::to(&format!("/console/mandates/{id}?done=signed")).into_response())
        }
        Err(e) => refused(e),
    }
}

/// Revokes the mandate, as its form asks (read as the other forms of this page are).
async fn revoke_form(
    State(state): State<AppState>,
    signed: Signed,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    if !form_token_ok(&signed, &FormFields::of(&body)) {
        return Ok(stale_form());
    }
    match revoke(&state, &signed.principal, &id).await {
        Ok(row) => Ok(Redirect::to(&format!(
            "/console/mandates/{}?done=revoked",
            row.mandate_id
        ))
        .into_response()),
        Err(e) => refused(e),
    }
}
