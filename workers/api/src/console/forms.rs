//! The console's decision forms. Each POST must carry the session's form token (else 403
//! and nothing changes), then calls [`super::decide`] and nothing else. A decision taken
//! sends the browser back to the operation's page (303, so a reload posts nothing); a
//! refusal answers the page itself with the reason at its top and what the operation is
//! now.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;

use super::decide::{Author, DecideError, Decided, Decisions, Outcome, Refusal};
use super::pages::{error_page, not_found, operation_page};
use super::session::Signed;
use crate::error::ApiError;
use crate::state::AppState;

/// Every field any decision form posts.
#[derive(Debug, Default, Deserialize)]
pub struct DecisionForm {
    form_token: Option<String>,
    payload_hash: Option<String>,
    reason: Option<String>,
    outcome: Option<String>,
    external_id: Option<String>,
    evidence: Option<String>,
}

enum Asked {
    Approve,
    Reject,
    Resolve,
    Dispute,
}

impl Asked {
    fn done(&self) -> &'static str {
        match self {
            Asked::Approve => "approved",
            Asked::Reject => "rejected",
            Asked::Resolve => "resolved",
            Asked::Dispute => "disputed",
        }
    }
}

fn status_of(r: &Refusal) -> StatusCode {
    match r {
        Refusal::NotFound => StatusCode::NOT_FOUND,
        Refusal::RoleNotAllowed | Refusal::SubmitterCannotApprove => StatusCode::FORBIDDEN,
        Refusal::HashMismatch
        | Refusal::NotPending { .. }
        | Refusal::Expired
        | Refusal::TooLate { .. } => StatusCode::CONFLICT,
        Refusal::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
    }
}

async fn decide(
    state: AppState,
    signed: Signed,
    id: String,
    f: DecisionForm,
    asked: Asked,
) -> Result<Response, ApiError> {
    if !f
        .form_token
        .as_deref()
        .is_some_and(|t| signed.secret.form_token_matches(t))
    {
        return Ok(error_page(StatusCode::FORBIDDEN, "Refused", "This form did not come from your console session; nothing was changed. Reload the page and try again."));
    }
    let who = Author {
        principal: &signed.principal,
        signed_in_with: "oidc",
    };
    let decisions = Decisions::new(state.store.clone());
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let result = match asked {
        Asked::Approve => {
            decisions
                .approve(who, &id, f.payload_hash.as_deref().unwrap_or_default())
                .await
        }
        Asked::Reject => decisions.reject(who, &id, &text(&f.reason)).await,
        Asked::Resolve => match f.outcome.as_deref().and_then(Outcome::parse) {
            Some(outcome) => {
                decisions
                    .resolve(
                        who,
                        &id,
                        outcome,
                        f.external_id.as_deref(),
                        &text(&f.evidence),
                    )
                    .await
            }
            None => {
                Err(Refusal::Invalid("choose an outcome: succeeded, failed or cancelled").into())
            }
        },
        Asked::Dispute => decisions.dispute(who, &id, &text(&f.reason)).await,
    };
    let refusal = match result {
        Ok(Decided::Done) => {
            tracing::info!(principal = %signed.principal.name, operation_id = %id, decision = asked.done(), "console decision");
            return Ok(
                Redirect::to(&format!("/console/operations/{id}?done={}", asked.done()))
                    .into_response(),
            );
        }
        Ok(Decided::AlreadyDone) => {
            return Ok(
                Redirect::to(&format!("/console/operations/{id}?done=already")).into_response(),
            )
        }
        Err(DecideError::Store(e)) => return Err(e.into()),
        Err(DecideError::Refused(r)) => r,
    };
    tracing::info!(principal = %signed.principal.name, operation_id = %id, refusal = ?refusal, "console decision refused");
    Ok(match operation_page(&state, &signed, &id, None).await? {
        Some(page) => page.refused(
            status_of(&refusal),
            format!("Refused: {refusal}. Nothing was changed."),
        ),
        None => not_found(),
    })
}

pub async fn approve(
    State(state): State<AppState>,
    signed: Signed,
    Path(id): Path<String>,
    Form(f): Form<DecisionForm>,
) -> Result<Response, ApiError> {
    decide(state, signed, id, f, Asked::Approve).await
}

pub async fn reject(
    State(state): State<AppState>,
    signed: Signed,
    Path(id): Path<String>,
    Form(f): Form<DecisionForm>,
) -> Result<Response, ApiError> {
    decide(state, signed, id, f, Asked::Reject).await
}

pub async fn resolve(
    State(state): State<AppState>,
    signed: Signed,
    Path(id): Path<String>,
    Form(f): Form<DecisionForm>,
) -> Result<Response, ApiError> {
    decide(state, signed, id, f, Asked::Resolve).await
}

pub async fn dispute(
    State(state): State<AppState>,
    signed: Signed,
    Path(id): Path<String>,
    Form(f): Form<DecisionForm>,
) -> Result<Response, ApiError> {
    decide(state, signed, id, f, Asked::Dispute).await
}
