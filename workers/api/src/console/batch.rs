//! Select and approve: a person ticks several pending operations of one tenant, reads the
//! selection as one decision (how many, the total per currency, who is paid, each item
//! with its risk cues, and the `fleet.approval_batch.v1` statement in words), and signs
//! that statement once with a passkey. The batch is recorded by the same function as
//! `POST /v1/approvals/batch` (`crate::batch_approval::record`): the statement rebuilt
//! from the stored operations, the signature verified with the registered key, one
//! approval per listed operation and none for any other, by the database.
//!
//! A batch approval is always signed: the database keeps the batch's signature as the
//! evidence of every approval it records. Operations whose policy asks for approvals
//! signed one by one are listed apart, to be opened and approved on their own page.
//!
//! | route | what |
//! |---|---|
//! | `GET /console/batch?tenant=` | the operations I may approve in a batch, with checkboxes |
//! | `GET /console/batch/review?tenant=&op=…` | the selection as one decision, and the passkey that signs it |
//! | `POST /console/batch` | record the signed batch |

use std::sync::Arc;

use std::collections::BTreeMap;

use askama::Template;
use axum::extract::{Query, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use chrono::Utc;
use fleet_core::approval_statement::{expiry_for, format_expiry, parse_expiry};
use fleet_core::authz::SignIn;
use fleet_core::batch_approval::{BatchItem, BatchStatement};
use fleet_core::money::format_amount;
use fleet_core::visible::reveal;
use fleet_core::{ApiAction, OpRef};
use fleet_store::ConsoleOperation;
use serde::Deserialize;
use serde_json::Value;

use super::form_fields::FormFields;
use super::handler::html;
use super::handler::ConsoleState;
use super::pages::{error_page, Banner};
use super::passkey_sign::{PasskeyAnswer, PasskeyAsk};
use super::present::{tenant_query, Allowed, Card, Detail, Me};
use super::session::Signed;
use super::setup::Console;
use crate::batch_approval::{record, BatchBody};
use crate::error::ApiError;
use crate::state::AppState;

/// The most pending operations the page lists (a batch lists at most 500).
const PAGE_ROWS: i64 = 200;

pub fn routes() -> Router<ConsoleState> {
    Router::new()
        .route("/console/batch", get(select).post(approve))
        .route("/console/batch/review", get(review))
}

fn amount_of(row: &fleet_store::OperationRow) -> Option<(i64, String)> {
    row.payload
        .get("amount_minor")
        .and_then(Value::as_i64)
        .zip(row.payload.get("currency").and_then(Value::as_str))
        .map(|(m, c)| (m, c.to_owned()))
}

fn amount_words(minor: i64, currency: &str) -> String {
    format_amount(minor, currency).unwrap_or_else(|| format!("{minor} {currency}"))
}

/// One pending operation as the selection shows it.
pub struct BatchLine {
    pub card: Card,
    /// Who is paid (the payee's id), when the action has a payee.
    pub payee: Option<String>,
    pub amount: Option<String>,
    pub payload_hash: String,
}

impl BatchLine {
    fn of(op: &ConsoleOperation) -> BatchLine {
        BatchLine {
            card: Card::of(op),
            payee: Detail::of(op).payee.map(|p| p.id),
            amount: amount_of(&op.row).map(|(m, c)| amount_words(m, &c)),
            payload_hash: op.row.payload_hash.to_string(),
        }
    }
}

/// A payee of the selection: how many operations pay it, and how much per currency.
pub struct PayeeTotal {
    pub payee: String,
    pub count: usize,
    pub amounts: String,
}

#[derive(Template)]
#[template(path = "console/batch.html")]
struct SelectPage {
    me: Me,
    /// The person's tenants, with the one shown.
    tenants: Vec<(String, String, bool)>,
    tenant: String,
    items: Vec<BatchLine>,
    /// Pending operations that need approvals signed one by one.
    signed_only: Vec<BatchLine>,
    banner: Option<Banner>,
}

#[derive(Template)]
#[template(path = "console/batch_review.html")]
struct ReviewPage {
    me: Me,
    tenant: String,
    tenant_query: String,
    items: Vec<BatchLine>,
    count: usize,
    totals: Vec<String>,
    payees: Vec<PayeeTotal>,
    words: String,
    batch_id: String,
    expires_at: String,
    passkey: Option<PasskeyAsk>,
}

/// The operations of `tenant` pending for a person's decision, split into those the
/// person may approve in a batch (needing no signature of their own each) and those that
/// need signed approvals.
async fn approvable(
    state: &AppState,
    signed: &Signed,
    tenant: &str,
) -> Result<(Vec<ConsoleOperation>, Vec<ConsoleOperation>), ApiError> {
    let ops = state
        .store
        .approval_inbox(&[tenant.to_owned()], PAGE_ROWS)
        .await?;
    let (mut batchable, mut signed_only) = (Vec::new(), Vec::new());
    for op in ops {
        if !Allowed::of(&signed.principal, &Card::of(&op)).approve {
            continue;
        }
        if op.row.signatures_required > 0 {
            signed_only.push(op);
        } else {
            batchable.push(op);
        }
    }
    Ok((batchable, signed_only))
}

fn chosen_tenant(signed: &Signed, asked: Option<&str>) -> Option<String> {
    let tenants = &signed.principal.tenants;
    match asked {
        Some(t) => tenants.iter().find(|x| *x == t).cloned(),
        None => tenants.first().cloned(),
    }
}

fn no_tenant() -> Response {
    error_page(
        StatusCode::NOT_FOUND,
        "Not found",
        "That tenant is not one of yours.",
    )
}

fn not_an_approver() -> Response {
    error_page(
        StatusCode::FORBIDDEN,
        "Refused",
        "Your role does not approve operations.",
    )
}

fn may_approve(signed: &Signed) -> bool {
    fleet_core::authz::may(&signed.principal.actor(), ApiAction::Approve).is_ok()
}

#[derive(Debug, Default, Deserialize)]
struct SelectQuery {
    tenant: Option<String>,
    /// After a batch: how many operations it approved.
    done: Option<usize>,
}

async fn select(
    State(state): State<AppState>,
    signed: Signed,
    Query(q): Query<SelectQuery>,
) -> Result<Response, ApiError> {
    if !may_approve(&signed) {
        return Ok(not_an_approver());
    }
    let Some(tenant) = chosen_tenant(&signed, q.tenant.as_deref()) else {
        return Ok(no_tenant());
    };
    let (batchable, signed_only) = approvable(&state, &signed, &tenant).await?;
    let tenants = signed
        .principal
        .tenants
        .iter()
        .map(|t| (reveal(t), tenant_query(t), *t == tenant))
        .collect();
    let banner = q.done.map(|n| Banner {
        kind: "ok",
        text: format!("You approved {n} operations in one decision."),
    });
    Ok(html(
        SelectPage {
            me: signed.me(),
            tenants,
            tenant: reveal(&tenant),
            items: batchable.iter().map(BatchLine::of).collect(),
            signed_only: signed_only.iter().map(BatchLine::of).collect(),
            banner,
        }
        .render(),
    ))
}

/// The statement over `ops` of `tenant`, read from the store as they are now.
fn statement_of(
    batch_id: String,
    tenant: &str,
    ops: &[ConsoleOperation],
) -> Option<BatchStatement> {
    let window = ops.iter().map(|o| o.row.approval_expires_at).min()?;
    let expires_at = expiry_for(window, Utc::now())?;
    let items = ops
        .iter()
        .map(|o| BatchItem {
            operation_id: o.row.operation_id.to_string(),
            payload_hash: o.row.payload_hash.to_string(),
            amount: amount_of(&o.row),
        })
        .collect();
    BatchStatement::new(batch_id, tenant.to_owned(), items, expires_at)
}

fn payee_totals(lines: &[BatchLine], ops: &[ConsoleOperation]) -> Vec<PayeeTotal> {
    let mut by_payee: BTreeMap<String, (usize, BTreeMap<String, i64>)> = BTreeMap::new();
    for (line, op) in lines.iter().zip(ops) {
        let payee = line
            .payee
            .clone()
            .unwrap_or_else(|| "(no payee)".to_owned());
        let entry = by_payee.entry(payee).or_default();
        entry.0 += 1;
        if let Some((m, c)) = amount_of(&op.row) {
            *entry.1.entry(c).or_insert(0) += m;
        }
    }
    by_payee
        .into_iter()
        .map(|(payee, (count, sums))| PayeeTotal {
            payee,
            count,
            amounts: sums
                .iter()
                .map(|(c, m)| amount_words(*m, c))
                .collect::<Vec<_>>()
                .join(", "),
        })
        .collect()
}

async fn review(
    State(state): State<AppState>,
    State(console): State<Arc<Console>>,
    signed: Signed,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    if !may_approve(&signed) {
        return Ok(not_an_approver());
    }
    let f = FormFields::parse(query.unwrap_or_default().as_bytes());
    let Some(tenant) = chosen_tenant(&signed, Some(&f.one("tenant"))) else {
        return Ok(no_tenant());
    };
    let picked = f.all("op");
    let (batchable, _) = approvable(&state, &signed, &tenant).await?;
    // Only what may still be approved in a batch now, whatever the address asks for.
    let ops: Vec<ConsoleOperation> = batchable
        .into_iter()
        .filter(|o| {
            picked
                .iter()
                .any(|p| p.as_str() == o.row.operation_id.as_str())
        })
        .collect();
    let batch_id = format!("ab_{}", ulid::Ulid::new());
    let Some(statement) = statement_of(batch_id, &tenant, &ops) else {
        return Ok(error_page(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Nothing selected",
            "None of the operations chosen waits for your approval any more: choose again.",
        ));
    };
    let lines: Vec<BatchLine> = ops.iter().map(BatchLine::of).collect();
    let payees = payee_totals(&lines, &ops);
    let passkey = PasskeyAsk::of(
        &state,
        &console,
        &signed.principal.name,
        &statement.to_bytes(),
    )
    .await?;
    Ok(html(
        ReviewPage {
            me: signed.me(),
            tenant: reveal(&tenant),
            tenant_query: tenant_query(&tenant),
            count: statement.items.len(),
            totals: statement
                .totals()
                .iter()
                .map(|(c, m)| amount_words(*m, c))
                .collect(),
            payees,
            words: reveal(&statement.to_words()),
            batch_id: statement.batch_id.clone(),
            expires_at: format_expiry(statement.expires_at),
            items: lines,
            passkey,
        }
        .render(),
    ))
}

/// A refusal of the batch in a person's words; `None` for what is no refusal.
fn refusal(e: &ApiError) -> Option<(StatusCode, &'static str)> {
    Some(match e {
        ApiError::Refused(_) => (
            StatusCode::CONFLICT,
            "an operation of the selection no longer waits for your approval (decided, corrected, expired or submitted by you)",
        ),
        ApiError::Invalid { .. } => (
            StatusCode::CONFLICT,
            "the selection is not what the page showed any more: choose again",
        ),
        ApiError::BadSignature { field: "key_id" } => (
            StatusCode::BAD_REQUEST,
            "the passkey you signed with is not one registered for you (or it was removed)",
        ),
        ApiError::BadSignature { .. } => (
            StatusCode::BAD_REQUEST,
            "the signature does not verify over this batch's statement",
        ),
        ApiError::Forbidden(_) => (
            StatusCode::FORBIDDEN,
            "you may not approve operations of this tenant",
        ),
        _ => return None,
    })
}

async fn approve(
    State(state): State<AppState>,
    signed: Signed,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let f = FormFields::of(&body);
    if !signed.secret.form_token_matches(&f.one("form_token")) {
        return Ok(error_page(StatusCode::FORBIDDEN, "Refused", "This form did not come from your console session; nothing was changed. Reload the page and try again."));
    }
    if !may_approve(&signed) {
        return Ok(not_an_approver());
    }
    let Some(tenant) = chosen_tenant(&signed, Some(&f.one("tenant"))) else {
        return Ok(no_tenant());
    };
    // The statement the page showed, rebuilt from what it posted (each operation with the
    // hash it showed) and the amounts as stored; the route compares it with the stored
    // operations again and the database once more.
    let mut items = Vec::new();
    for item in f.all("item") {
        let Some((op, hash)) = item.split_once(' ') else {
            continue;
        };
        let amount = state
            .store
            .get(OpRef::new(&tenant, op))
            .await?
            .and_then(|row| amount_of(&row));
        items.push(BatchItem {
            operation_id: op.to_owned(),
            payload_hash: hash.to_owned(),
            amount,
        });
    }
    let statement = parse_expiry(&f.one("expires_at")).and_then(|expires_at| {
        BatchStatement::new(f.one("batch_id"), tenant.clone(), items, expires_at)
    });
    let Some(statement) = statement else {
        return Ok(error_page(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Refused",
            "Refused: the form names no batch to approve. Nothing was changed.",
        ));
    };
    let answer = PasskeyAnswer {
        credential_id: Some(f.one("credential_id")),
        authenticator_data: Some(f.one("authenticator_data")),
        client_data_json: Some(f.one("client_data_json")),
        signature: Some(f.one("signature")),
    };
    let (key_id, signature) = answer.as_signature(&state, &signed.principal.name).await?;
    let body = BatchBody {
        statement: statement.to_json(),
        key_id,
        signature,
    };
    match record(&state, &signed.principal, SignIn::Oidc, &body).await {
        Ok(answer) => {
            let n = answer["operations"].as_array().map_or(0, Vec::len);
            tracing::info!(principal = %signed.principal.name, count = n, "console batch approval");
            Ok(Redirect::to(&format!(
                "/console/batch?{}&done={n}",
                tenant_query(&tenant)
            ))
            .into_response())
        }
        Err(e) => match refusal(&e) {
            Some((status, words)) => Ok(error_page(
                status,
                "Refused",
                &format!("Refused: {words}. Nothing was approved."),
            )),
            None => Err(e),
        },
    }
}
