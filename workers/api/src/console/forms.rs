//! The console's decision forms. Each POST must carry the session's form token (else 403
//! and nothing changes), then calls the same decision functions as the JSON routes
//! ([`crate::decisions`]) and nothing else. A decision taken
//! sends the browser back to the operation's page (303, so a reload posts nothing); a
//! refusal answers the page itself with the reason at its top and what the operation is
//! now.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{post, MethodRouter};
use axum::{Form, Router};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use fleet_core::authz::{Denial, SignIn};
use fleet_core::passkey::Assertion;
use fleet_core::step_up::StepUp;
use fleet_core::wording::amount_confirmed;
use fleet_core::{Resolution, Signature};
use fleet_store::Resolve;
use serde::Deserialize;

use super::handler::ConsoleState;
use super::pages::{error_page, not_found, operation_page};
use super::present::{step_up_of, tenant_query};
use super::session::Signed;
use super::setup::Console;
use crate::decisions::{locate, Addressed, Asking, Decided, DecisionError};
use crate::error::ApiError;
use crate::signed_approval::SignatureOffer;
use crate::state::AppState;

/// The operation's tenant, as every form's action names it (`?tenant=`).
#[derive(Debug, Default, Deserialize)]
pub struct TenantQuery {
    tenant: Option<String>,
}

/// Every field any decision form posts.
#[derive(Debug, Default, Deserialize)]
pub struct DecisionForm {
    form_token: Option<String>,
    payload_hash: Option<String>,
    reason: Option<String>,
    outcome: Option<String>,
    external_id: Option<String>,
    evidence: Option<String>,
    /// Above the policy's threshold: the amount as the approver re-typed it.
    confirm_amount: Option<String>,
    /// A passkey's approval: the statement's expiry the page offered, and what the
    /// authenticator returned (each base64url).
    expires_at: Option<String>,
    credential_id: Option<String>,
    authenticator_data: Option<String>,
    client_data_json: Option<String>,
    signature: Option<String>,
}

/// Whether an approval of `id` that needs the amount re-typed has it: true when none is
/// needed (or the operation is not the person's to see: the decision answers that).
async fn amount_retyped(
    state: &AppState,
    signed: &Signed,
    at: Addressed<'_>,
    typed: Option<&str>,
) -> Result<bool, ApiError> {
    let key = match locate(&state.store, &signed.principal.actor(), at).await {
        Ok((key, _)) => key,
        Err(DecisionError::Store(e)) => return Err(e.into()),
        Err(_) => return Ok(true),
    };
    let Some(op) = state.store.console_operation(key.op()).await? else {
        return Ok(true);
    };
    Ok(match step_up_of(&op) {
        (StepUp::RetypeAmount, Some((minor, currency, _))) => {
            typed.is_some_and(|t| amount_confirmed(t, minor, &currency))
        }
        _ => true,
    })
}

/// A passkey's approval as an approve body's signature: the key the credential id names
/// among the person's passkeys, and the assertion in its stored form. Missing or
/// malformed values are left out, for the signature check to name.
async fn passkey_offer(
    state: &AppState,
    principal: &str,
    f: &DecisionForm,
) -> Result<(Option<String>, Option<String>), ApiError> {
    let Some(credential) = f.credential_id.as_deref() else {
        return Ok((None, None));
    };
    let credential = URL_SAFE_NO_PAD.decode(credential).unwrap_or_default();
    let key_id = state
        .store
        .active_passkeys(principal)
        .await?
        .into_iter()
        .find(|p| p.credential_id == credential)
        .map(|p| p.key_id);
    let signature = match (&f.authenticator_data, &f.client_data_json, &f.signature) {
        (Some(a), Some(c), Some(s)) => {
            Assertion::from_parts(a, c, s).map(|a| Signature::of_assertion(&a).to_text())
        }
        _ => None,
    };
    Ok((key_id, signature))
}

/// The decision a form asks for.
#[derive(Debug, Clone, Copy)]
enum Asked {
    Approve,
    Reject,
    Resolve,
    Dispute,
}

impl Asked {
    const ALL: [Asked; 4] = [
        Asked::Approve,
        Asked::Reject,
        Asked::Resolve,
        Asked::Dispute,
    ];

    fn path(self) -> &'static str {
        match self {
            Asked::Approve => "/console/operations/{id}/approve",
            Asked::Reject => "/console/operations/{id}/reject",
            Asked::Resolve => "/console/operations/{id}/resolve",
            Asked::Dispute => "/console/operations/{id}/dispute",
        }
    }

    fn done(&self) -> &'static str {
        match self {
            Asked::Approve => "approved",
            Asked::Reject => "rejected",
            Asked::Resolve => "resolved",
            Asked::Dispute => "disputed",
        }
    }
}

/// A refused decision in a person's words, with the status the page answers with; `None`
/// for an operation the person may not see (the page is "not found", as over the API).
fn refusal(e: &DecisionError) -> Option<(StatusCode, &'static str)> {
    use DecisionError as E;
    let conflict = StatusCode::CONFLICT;
    let invalid = StatusCode::UNPROCESSABLE_ENTITY;
    Some(match e {
        E::Denied(Denial::NotFound | Denial::TenantNotGranted) | E::Store(_) => return None,
        E::Denied(Denial::Ambiguous) => (
            conflict,
            "this id names an operation in more than one of your tenants: open it from a list",
        ),
        E::Denied(Denial::RoleNotAllowed) => {
            (StatusCode::FORBIDDEN, "your role may not take this decision")
        }
        E::Denied(Denial::SubmitterCannotApprove) => (
            StatusCode::FORBIDDEN,
            "you submitted this operation: another person must approve it",
        ),
        E::Denied(Denial::NotRecordedApprover) => (
            StatusCode::FORBIDDEN,
            "the deployment's records do not make you an approver of this tenant, so your approval would not count: ask an administrator (fleetctl principal add --role approver)",
        ),
        E::HashMismatch => (
            conflict,
            "the page you approved from does not show the stored snapshot",
        ),
        E::ApprovalExpired => (conflict, "the approval window has expired"),
        E::SignatureRequired => (
            conflict,
            "this operation needs approvals signed with your own key: approve it with your passkey, or with `fleetctl approve --key`",
        ),
        E::SignatureInvalid("key_id") => (
            StatusCode::BAD_REQUEST,
            "the passkey you signed with is not one registered for you (or it was removed)",
        ),
        E::SignatureInvalid(_) => (
            StatusCode::BAD_REQUEST,
            "the signature does not count for this operation",
        ),
        E::NotPending => (
            conflict,
            "the operation is no longer waiting for a decision",
        ),
        E::AlreadyStarted => (
            conflict,
            "execution has begun or the operation has ended: it is too late to reject it",
        ),
        E::NotAllowedInStatus => (
            conflict,
            "the operation's status does not allow this decision now",
        ),
        E::ChangedMeanwhile => (
            conflict,
            "the operation changed while you were deciding: look at it again",
        ),
        E::InvalidField("reason") => (invalid, "a reason is required (at most 4,096 characters)"),
        E::InvalidField("evidence") => (invalid, "evidence is required (at most 4,096 characters)"),
        E::InvalidField("external_id") => (
            invalid,
            "resolving as succeeded needs the provider's id of the effect (one word of visible characters)",
        ),
        E::InvalidField("outcome") => (invalid, "choose an outcome: succeeded, failed or cancelled"),
        E::InvalidField(_) => (invalid, "a value of the form is missing or too long"),
    })
}

/// Checks the form token, then takes the decision through the same functions as the
/// JSON routes (authorization, quorum, the execute doorbell), as the signed-in person.
async fn decide(
    state: AppState,
    console: Arc<Console>,
    signed: Signed,
    id: String,
    tenant: Option<String>,
    f: DecisionForm,
    asked: Asked,
) -> Result<Response, ApiError> {
    let at = Addressed::new(&id, tenant.as_deref());
    if !f
        .form_token
        .as_deref()
        .is_some_and(|t| signed.secret.form_token_matches(t))
    {
        return Ok(error_page(StatusCode::FORBIDDEN, "Refused", "This form did not come from your console session; nothing was changed. Reload the page and try again."));
    }
    let asking = Asking {
        who: signed.principal.actor(),
        signed_in: SignIn::Oidc,
        at,
    };
    let decisions = &state.decisions;
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let result = match asked {
        Asked::Approve => {
            let hash = f.payload_hash.as_deref().unwrap_or_default();
            if !amount_retyped(&state, &signed, at, f.confirm_amount.as_deref()).await? {
                let page = operation_page(&state, &console, &signed, at, None).await?;
                return Ok(match page {
                    Ok(page) => page.refused(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "Refused: type the amount exactly as this page shows it to confirm a payment this large. Nothing was changed.".to_owned(),
                    ),
                    Err(answer) => answer,
                });
            }
            // Signed when the person approved with a passkey; otherwise unsigned, which
            // an operation that asks for signatures refuses (`signature_required`).
            let (key_id, signature) = passkey_offer(&state, &signed.principal.name, &f).await?;
            let offer = if f.credential_id.is_some() {
                SignatureOffer {
                    key_id: Some(key_id.as_deref().unwrap_or("")),
                    signature: Some(signature.as_deref().unwrap_or("")),
                    expires_at: Some(f.expires_at.as_deref().unwrap_or("")),
                }
            } else {
                SignatureOffer::default()
            };
            decisions.approve(asking, hash, &offer).await
        }
        Asked::Reject => decisions.reject(asking, &text(&f.reason)).await,
        Asked::Resolve => match f.outcome.as_deref().and_then(Resolution::parse) {
            Some(outcome) => {
                let evidence = text(&f.evidence);
                // An empty field of the form is no id at all.
                let external_id = f
                    .external_id
                    .as_deref()
                    .map(str::trim)
                    .filter(|x| !x.is_empty());
                let r = Resolve {
                    outcome,
                    external_id,
                    evidence: &evidence,
                };
                decisions.resolve(asking, r).await
            }
            None => Err(DecisionError::InvalidField("outcome")),
        },
        Asked::Dispute => decisions.dispute(asking, &text(&f.reason)).await,
    };
    let error = match result {
        Ok(Decided { view, changed }) => {
            let done = if changed { asked.done() } else { "already" };
            tracing::info!(principal = %signed.principal.name, operation_id = %id, decision = done, "console decision");
            let tenant = tenant_query(&view.tenant_id);
            return Ok(
                Redirect::to(&format!("/console/operations/{id}?{tenant}&done={done}"))
                    .into_response(),
            );
        }
        Err(DecisionError::Store(e)) => return Err(e.into()),
        Err(e) => e,
    };
    tracing::info!(principal = %signed.principal.name, operation_id = %id, refusal = %error, "console decision refused");
    let Some((status, words)) = refusal(&error) else {
        return Ok(not_found());
    };
    Ok(
        match operation_page(&state, &console, &signed, at, None).await? {
            Ok(page) => page.refused(status, format!("Refused: {words}. Nothing was changed.")),
            Err(answer) => answer,
        },
    )
}

/// The decision forms' routes, `POST /console/operations/{id}/<decision>`.
pub fn routes() -> Router<ConsoleState> {
    Asked::ALL.into_iter().fold(Router::new(), |r, asked| {
        r.route(asked.path(), route(asked))
    })
}

/// The POST route of the form that asks for `asked`; the four forms differ in nothing
/// else.
fn route(asked: Asked) -> MethodRouter<ConsoleState> {
    post(
        move |State(state): State<AppState>,
              State(console): State<Arc<Console>>,
              signed: Signed,
              Path(id): Path<String>,
              Query(q): Query<TenantQuery>,
              Form(f): Form<DecisionForm>| {
            decide(state, console, signed, id, q.tenant, f, asked)
        },
    )
}
