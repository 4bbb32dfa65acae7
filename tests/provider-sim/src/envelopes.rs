//! The reference e-signature API: envelopes (a contract made from a template, for one
//! recipient), created under an idempotency key kept `esign_key_retention_s` (one hour by
//! default), then sent asynchronously.
//!
//! | request | answer |
//! |---|---|
//! | `POST /v1/envelopes` `{"external_ref", "template_id", "recipient_id", "document_sha256", "subject"}` + `Idempotency-Key` | `201 {"id": "env_…", "status": "created", …}`; keys as the payments API's (same body → the saved answer, other body → 400, in flight → 409) |
//! | `GET /v1/envelopes?external_ref=R` | `200 {"data": [envelope, …]}` (envelopes older than `esign_search_lag_ms`) |
//! | `GET /v1/envelopes/{id}` | `200` the envelope, or `404` |
//! | `POST /_sim/envelopes/{id}/settle` `{"status": "sent" \| "delivery_failed"}` | `200 {"envelope", "event_id"}`; `404`; `409` when no longer `created` |
//!
//! With `esign_auto_send`, an envelope is sent `esign_send_delay_ms` after its commit:
//! `sent`, or `delivery_failed` (`failure_code: "recipient_unreachable"`) for a recipient
//! id starting with `bounce_`; either way announced by `envelope.sent` /
//! `envelope.delivery_failed` when webhooks are configured. Without it, envelopes stay
//! `created` until settled through the admin route. An envelope is an effect from its
//! commit, whatever becomes of its sending; effects are counted by `external_ref`.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::api_error::ApiError;
use crate::fields::Fields;
use crate::idempotency::IdempotencyStore;
use crate::ledger::{record_by_fields, Ledger};
use crate::resource::{NewObject, Resource};
use crate::route::Route;
use crate::state::{App, SimState};
use crate::webhook_delivery::{dispatch_if_any, event_if_configured};

const FIELDS: &[&str] = &[
    "external_ref",
    "template_id",
    "recipient_id",
    "document_sha256",
    "subject",
];

/// Recipients whose delivery fails.
const BOUNCING: &str = "bounce_";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvelopeStatus {
    Created,
    Sent,
    DeliveryFailed,
}

#[derive(Clone, Debug, Serialize)]
pub struct Envelope {
    pub id: String,
    pub status: EnvelopeStatus,
    pub external_ref: String,
    pub template_id: String,
    pub recipient_id: String,
    /// Contact data a real provider holds on file for the recipient and echoes in every
    /// answer; the fleet has no use for it and must not keep it.
    pub recipient_email: String,
    pub document_sha256: String,
    pub subject: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_code: Option<&'static str>,
    pub created_at: DateTime<Utc>,
}

record_by_fields!(Envelope, external_ref);

#[derive(Debug)]
pub struct EnvelopeParams {
    external_ref: String,
    template_id: String,
    recipient_id: String,
    document_sha256: String,
    subject: String,
}

impl Resource for Envelope {
    const CREATE: Route = Route::CreateEnvelope;
    const SEARCH: Route = Route::SearchEnvelopes;
    const GET: Route = Route::GetEnvelope;
    const REFERENCE: &'static str = "external_ref";
    type Params = EnvelopeParams;

    fn ledger(state: &SimState) -> &Ledger<Self> {
        &state.envelopes
    }

    fn ledger_mut(state: &mut SimState) -> &mut Ledger<Self> {
        &mut state.envelopes
    }

    fn keys(state: &mut SimState) -> &mut IdempotencyStore {
        &mut state.esign_keys
    }

    fn search_lag(app: &App) -> TimeDelta {
        app.esign().search_lag
    }

    fn validate(body: &Value, _state: &SimState) -> Result<EnvelopeParams, ApiError> {
        let fields = Fields::of(body, FIELDS)?;
        let document_sha256 = fields.text("document_sha256")?;
        if document_sha256.len() != 64
            || !document_sha256
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        {
            return Err(ApiError::invalid("parameter_invalid", "document_sha256"));
        }
        Ok(EnvelopeParams {
            external_ref: fields.text("external_ref")?,
            template_id: fields.text("template_id")?,
            recipient_id: fields.text("recipient_id")?,
            document_sha256,
            subject: fields.text("subject")?,
        })
    }

    fn execute(
        params: EnvelopeParams,
        _state: &SimState,
        new: NewObject,
    ) -> Result<Envelope, ApiError> {
        Ok(Envelope {
            id: format!("env_{}", ulid::Ulid::new()),
            status: EnvelopeStatus::Created,
            recipient_email: format!("{}@customer.example", params.recipient_id),
            external_ref: params.external_ref,
            template_id: params.template_id,
            recipient_id: params.recipient_id,
            document_sha256: params.document_sha256,
            subject: params.subject,
            failure_code: None,
            created_at: new.created_at,
        })
    }

    /// Sending starts on its own, a little later.
    fn committed(app: &App, envelope: &Envelope) {
        let Some(delay) = app.esign().send_after else {
            return;
        };
        let (app, id) = (app.clone(), envelope.id.clone());
        let outcome = if envelope.recipient_id.starts_with(BOUNCING) {
            EnvelopeStatus::DeliveryFailed
        } else {
            EnvelopeStatus::Sent
        };
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            // Settled by the admin route meanwhile: nothing more to do.
            let _ = settle(&app, &id, outcome);
        });
    }
}

/// How the e-signature provider behaves, from `SimConfig`.
#[derive(Clone, Copy, Debug)]
pub struct EsignSettings {
    pub search_lag: TimeDelta,
    /// When set, envelopes are sent this long after their commit.
    pub send_after: Option<Duration>,
}

/// Moves a `created` envelope to its final status and announces it.
fn settle(
    app: &App,
    id: &str,
    status: EnvelopeStatus,
) -> Result<(Value, Option<String>), ApiError> {
    let (envelope, event) = {
        let mut state = app.lock();
        let Some(envelope) = state.envelopes.get_mut(id) else {
            return Err(ApiError::not_found());
        };
        if envelope.status != EnvelopeStatus::Created {
            return Err(ApiError::conflict("envelope_not_created"));
        }
        envelope.status = status;
        envelope.failure_code =
            (status == EnvelopeStatus::DeliveryFailed).then_some("recipient_unreachable");
        let object = serde_json::to_value(&*envelope).expect("an envelope serialises");
        let event_type = match status {
            EnvelopeStatus::DeliveryFailed => "envelope.delivery_failed",
            EnvelopeStatus::Sent | EnvelopeStatus::Created => "envelope.sent",
        };
        let event = event_if_configured(&state, event_type, &object);
        (object, event)
    };
    Ok((envelope, dispatch_if_any(app, event)))
}

pub fn admin_routes() -> Router<App> {
    Router::new().route("/_sim/envelopes/{id}/settle", post(settle_route))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settle {
    status: EnvelopeStatus,
}

async fn settle_route(State(app): State<App>, Path(id): Path<String>, body: Bytes) -> Response {
    let status = match serde_json::from_slice::<Settle>(&body) {
        Ok(Settle {
            status: status @ (EnvelopeStatus::Sent | EnvelopeStatus::DeliveryFailed),
        }) => status,
        Ok(_) => return ApiError::invalid("parameter_invalid", "status").into_response(),
        Err(_) => return ApiError::invalid_json().into_response(),
    };
    match settle(&app, &id, status) {
        Ok((envelope, event_id)) => {
            Json(json!({"envelope": envelope, "event_id": event_id})).into_response()
        }
        Err(refused) => refused.into_response(),
    }
}
