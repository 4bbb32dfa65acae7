//! `/v1/dead-letters`: the messages the fleet could not take, kept in Postgres by
//! fleet-relay, for operators. Listing and reading them never touches the broker; a
//! replay puts one back through the same validation it failed, a discard sets it aside
//! with a reason. Every replay and discard is recorded (who, when, what, outcome) by the
//! database's own function, in a table no component may write.
//!
//! Tenant-scoped: a dead letter whose body names a tenant is seen only by operators of
//! that tenant (another tenant's is not found, as a free id); one naming none (a body
//! that is not even JSON) is seen by every operator.
//!
//! A replay of an intent runs the API's intake (`POST /v1/intents`' own code) as the
//! principal the message's broker-validated `user_id` speaks for, never as anyone the
//! body names: stored, the dead letter is resolved; refused again, it stays, with the new
//! reason. A replay of a doorbell (`operations.execute`, `operations.reconcile`) rings it
//! again: a bell carries no authority, the worker reads the operation from Postgres.
//! Webhooks are not replayed from here (the provider sends them again).

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::Json;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use fleet_broker::Queue;
use fleet_core::doorbell::Doorbell;
use fleet_core::Role;
use fleet_store::{DeadLetterAction, DeadLetterFilter, DeadLetterRow};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::json_body::JsonBody;
use crate::paging;
use crate::problem::Problem;
use crate::query_params::Params;
use crate::route_responses::{PostgresSilent, RateLimited, Unauthenticated};
use crate::state::AppState;

/// Most characters of a discard's reason.
const MAX_REASON_CHARS: usize = 4_096;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DeadLetterQuery {
    /// Page size, 1 to 100 (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    limit: Option<String>,
    /// `next_cursor` of the previous page (leave it out for the first page).
    #[param(value_type = Option<String>, pattern = "^[0-9]+$", max_length = 20)]
    cursor: Option<String>,
    /// Only this work queue's (`intents.prepare`, `operations.execute`, …).
    queue: Option<String>,
    /// Only those with this reason (`malformed`, `payee_directory_unreachable`, …).
    reason: Option<String>,
}

/// A dead letter: a message a work queue could not take, and why.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeadLetter {
    pub id: i64,
    /// The work queue it was dead-lettered from.
    pub queue: String,
    /// Why (the reason of its last refusal), null when nobody said.
    pub reason: Option<String>,
    /// Why it was first dead-lettered.
    pub first_reason: Option<String>,
    /// The tenant its body names, if any.
    pub tenant_id: Option<String>,
    /// The broker user that published it (validated by the broker): whom a replay submits as.
    pub user_id: Option<String>,
    /// The body: as JSON when it is JSON, else null (see `body_base64`).
    #[schema(value_type = Option<Object>)]
    pub body: Option<Value>,
    /// The body's bytes, base64.
    pub body_base64: String,
    /// The fleet's and the broker's dead-letter headers.
    #[schema(value_type = Object)]
    pub headers: Value,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub dead_lettered_at: Option<chrono::DateTime<chrono::Utc>>,
    /// When the relay moved it from the broker into the fleet's records.
    #[schema(value_type = String, format = DateTime)]
    pub kept_at: chrono::DateTime<chrono::Utc>,
    /// Null while it waits; `replayed` or `discarded`.
    pub resolution: Option<String>,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub resolved_at: Option<chrono::DateTime<chrono::Utc>>,
    pub resolved_by: Option<String>,
    /// Every replay and discard, oldest first (only in `GET /v1/dead-letters/{id}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<DeadLetterActionView>>,
}

/// One replay or discard, as recorded.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeadLetterActionView {
    /// `replay` or `discard`.
    pub action: String,
    /// `operator:<name>`.
    pub actor: String,
    /// `discarded`, `stored`, `already_stored`, `rung`, `refused` or `unavailable`.
    pub outcome: String,
    /// The discard's reason, or the refusal's.
    pub reason: Option<String>,
    #[schema(value_type = String, format = DateTime)]
    pub at: chrono::DateTime<chrono::Utc>,
}

/// One page of dead letters waiting for someone, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeadLetterPage {
    pub data: Vec<DeadLetter>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// A discard: why the message is set aside.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DiscardBody {
    /// Why (required, at most 4,096 characters).
    #[schema(example = "test message from a misconfigured agent")]
    pub reason: String,
}

/// What a replay did.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReplayOutcome {
    /// `stored` (the intent is an operation now), `already_stored`, `rung` (the doorbell
    /// was published again) or `refused` (the same validation refused it again; it stays).
    pub outcome: String,
    /// The refusal's reason, when refused.
    pub reason: Option<String>,
    /// The operation's view, when stored.
    #[schema(value_type = Option<Object>)]
    pub operation: Option<Value>,
    #[schema(value_type = DeadLetter)]
    pub dead_letter: DeadLetter,
}

impl DeadLetter {
    fn of(row: DeadLetterRow, actions: Option<Vec<DeadLetterAction>>) -> DeadLetter {
        DeadLetter {
            id: row.id,
            queue: row.queue,
            reason: row.reason,
            first_reason: row.first_reason,
            tenant_id: row.tenant_id,
            user_id: row.user_id,
            body: serde_json::from_slice(&row.body).ok(),
            body_base64: STANDARD.encode(&row.body),
            headers: row.headers,
            dead_lettered_at: row.dead_lettered_at,
            kept_at: row.kept_at,
            resolution: row.resolution,
            resolved_at: row.resolved_at,
            resolved_by: row.resolved_by,
            actions: actions.map(|a| {
                a.into_iter()
                    .map(|a| DeadLetterActionView {
                        action: a.action,
                        actor: a.actor,
                        outcome: a.outcome,
                        reason: a.reason,
                        at: a.at,
                    })
                    .collect()
            }),
        }
    }
}

/// Only operators handle dead letters.
fn operator(caller: &Caller) -> Result<(), ApiError> {
    if caller.0.role == Role::Operator {
        Ok(())
    } else {
        Err(ApiError::Forbidden("role_not_allowed"))
    }
}

fn actor(caller: &Caller) -> String {
    format!("operator:{}", caller.0.name)
}

fn parse_id(id: &str) -> Result<i64, ApiError> {
    id.parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or(ApiError::NotFound)
}

/// Dead letters waiting for someone.
///
/// Operators only. Oldest first, in pages; the messages of the caller's tenants and those
/// naming no tenant. Read from the fleet's records, never from the broker.
#[utoipa::path(
    get,
    path = "/v1/dead-letters",
    tag = "dead-letters",
    params(DeadLetterQuery),
    responses(
        (status = 200, description = "One page of dead letters nobody replayed or discarded yet.", body = DeadLetterPage),
        (status = 400, description = "`invalid_query`: an unknown parameter, `limit` outside 1..100, a cursor this API did not hand out.", body = Problem, content_type = "application/problem+json"),
        Unauthenticated,
        (status = 403, description = "`role_not_allowed`: only operators handle dead letters.", body = Problem, content_type = "application/problem+json"),
        RateLimited,
        PostgresSilent,
    ),
    security(("bearer" = []))
)]
pub async fn list_dead_letters(
    State(state): State<AppState>,
    caller: Caller,
    q: Result<Params<DeadLetterQuery>, ApiError>,
) -> Result<Json<DeadLetterPage>, ApiError> {
    operator(&caller)?;
    let Params(q) = q?;
    let limit = paging::limit(q.limit.as_deref())?;
    let after = match q.cursor.as_deref() {
        None => 0,
        Some(c) => c
            .parse::<i64>()
            .ok()
            .filter(|c| *c > 0)
            .ok_or_else(|| paging::bad_query("cursor"))?,
    };
    let filter = DeadLetterFilter {
        tenants: &caller.0.tenants,
        queue: q.queue.as_deref(),
        reason: q.reason.as_deref(),
        after,
        limit: limit + 1,
    };
    let rows = state.store.dead_letters(&filter).await?;
    let (rows, next_cursor) = paging::cut(rows, limit, |r| r.id.to_string());
    Ok(Json(DeadLetterPage {
        data: rows.into_iter().map(|r| DeadLetter::of(r, None)).collect(),
        next_cursor,
    }))
}

/// One dead letter, with every replay and discard of it.
#[utoipa::path(
    get,
    path = "/v1/dead-letters/{id}",
    tag = "dead-letters",
    params(("id" = i64, Path, description = "The dead letter's id.")),
    responses(
        (status = 200, description = "The dead letter (also once resolved), with its actions.", body = DeadLetter),
        Unauthenticated,
        (status = 403, description = "`role_not_allowed`: only operators handle dead letters.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such dead letter among the caller's tenants.", body = Problem, content_type = "application/problem+json"),
        RateLimited,
        PostgresSilent,
    ),
    security(("bearer" = []))
)]
pub async fn get_dead_letter(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<DeadLetter>, ApiError> {
    operator(&caller)?;
    Ok(Json(read(&state, &caller, parse_id(&id)?).await?))
}

async fn read(state: &AppState, caller: &Caller, id: i64) -> Result<DeadLetter, ApiError> {
    let (row, actions) = state
        .store
        .dead_letter(id, &caller.0.tenants)
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok(DeadLetter::of(row, Some(actions)))
}

/// Set a dead letter aside, with a reason.
///
/// Recorded with who and why; the dead letter leaves the list and stays readable by id.
#[utoipa::path(
    post,
    path = "/v1/dead-letters/{id}/discard",
    tag = "dead-letters",
    params(("id" = i64, Path, description = "The dead letter's id.")),
    request_body(content = DiscardBody, content_type = "application/json"),
    responses(
        (status = 200, description = "Discarded; the dead letter as it is now.", body = DeadLetter),
        Unauthenticated,
        (status = 403, description = "`role_not_allowed`: only operators handle dead letters.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such dead letter among the caller's tenants.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`dead_letter_resolved`: it was replayed or discarded already; nothing was recorded.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`malformed` or `invalid_field` (`reason`: blank or longer than 4,096 characters).", body = Problem, content_type = "application/problem+json"),
        RateLimited,
        PostgresSilent,
    ),
    security(("bearer" = []))
)]
pub async fn discard_dead_letter(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<DeadLetter>, ApiError> {
    operator(&caller)?;
    let id = parse_id(&id)?;
    let JsonBody(b) = JsonBody::<DiscardBody>::read(&headers, body).await?;
    let reason = b.reason.trim();
    if reason.is_empty() || reason.chars().count() > MAX_REASON_CHARS || reason.contains('\0') {
        return Err(ApiError::Invalid {
            code: "invalid_field",
            field: Some("reason".to_owned()),
        });
    }
    // Seen by this caller first: another tenant's is not found, not discarded.
    read(&state, &caller, id).await?;
    let recorded = state
        .store
        .act_on_dead_letter(
            id,
            "discard",
            &actor(&caller),
            "discarded",
            Some(reason),
            Some("discarded"),
        )
        .await?;
    if !recorded {
        return Err(ApiError::Refused(RESOLVED));
    }
    tracing::info!(dead_letter_id = id, principal = %caller.0.name, "dead letter discarded");
    Ok(Json(read(&state, &caller, id).await?))
}

/// The refusal of an action on a dead letter already replayed or discarded.
pub const RESOLVED: &str = "dead_letter_resolved";
/// The refusal of a replay from a queue this route does not replay.
pub const NOT_REPLAYABLE: &str = "replay_not_supported";

/// Put a dead letter back through the same validation.
///
/// An intent runs the intake of `POST /v1/intents` as the principal its publishing broker
/// user speaks for: stored, the dead letter is resolved (`replayed`); refused again, it
/// stays, with the new reason. A doorbell is published again to its queue. Every replay
/// is recorded.
#[utoipa::path(
    post,
    path = "/v1/dead-letters/{id}/replay",
    tag = "dead-letters",
    params(("id" = i64, Path, description = "The dead letter's id.")),
    responses(
        (status = 200, description = "Replayed: `outcome` says what came of it (a refusal again is an answer too; the dead letter stays).", body = ReplayOutcome),
        Unauthenticated,
        (status = 403, description = "`role_not_allowed`: only operators handle dead letters.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such dead letter among the caller's tenants.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`dead_letter_resolved`: it was replayed or discarded already; `replay_not_supported`: its queue's messages are not replayed from here (`webhooks.ingest`), or a doorbell that is not one.", body = Problem, content_type = "application/problem+json"),
        RateLimited,
        (status = 503, description = "`unavailable` or `payee_directory_unavailable`: nothing was decided (the attempt is recorded); replay again after `Retry-After`.", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn replay_dead_letter(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ReplayOutcome>, ApiError> {
    operator(&caller)?;
    let id = parse_id(&id)?;
    let (row, _) = state
        .store
        .dead_letter(id, &caller.0.tenants)
        .await?
        .ok_or(ApiError::NotFound)?;
    if row.resolved_at.is_some() {
        return Err(ApiError::Refused(RESOLVED));
    }
    let fate = match row.queue.as_str() {
        q if q == Queue::IntentsPrepare.wire_name() => replay_intent(&state, &row).await,
        q if q == Queue::OperationsExecute.wire_name() => {
            ring(&state, Queue::OperationsExecute, &row.body).await
        }
        q if q == Queue::OperationsReconcile.wire_name() => {
            ring(&state, Queue::OperationsReconcile, &row.body).await
        }
        _ => return Err(ApiError::Refused(NOT_REPLAYABLE)),
    };
    let (outcome, reason, operation, resolution) = match fate {
        Fate::Stored(created, view) => (
            if created { "stored" } else { "already_stored" },
            None,
            Some(view),
            Some("replayed"),
        ),
        Fate::Rung => ("rung", None, None, Some("replayed")),
        Fate::Refused(reason) => ("refused", Some(reason), None, None),
        Fate::NotABell => return Err(ApiError::Refused(NOT_REPLAYABLE)),
        Fate::Later(e) => {
            state
                .store
                .act_on_dead_letter(
                    id,
                    "replay",
                    &actor(&caller),
                    "unavailable",
                    Some(e.code()),
                    None,
                )
                .await?;
            return Err(e);
        }
    };
    let recorded = state
        .store
        .act_on_dead_letter(
            id,
            "replay",
            &actor(&caller),
            outcome,
            reason.as_deref(),
            resolution,
        )
        .await?;
    if !recorded {
        return Err(ApiError::Refused(RESOLVED));
    }
    tracing::info!(dead_letter_id = id, principal = %caller.0.name, outcome, reason = reason.as_deref().unwrap_or(""), "dead letter replayed");
    Ok(Json(ReplayOutcome {
        outcome: outcome.to_owned(),
        reason,
        operation,
        dead_letter: read(&state, &caller, id).await?,
    }))
}

/// What came of a replay.
enum Fate {
    Stored(bool, Value),
    Rung,
    Refused(String),
    NotABell,
    /// Nothing was decided: Postgres or the payee's directory did not answer.
    Later(ApiError),
}

async fn replay_intent(state: &AppState, row: &DeadLetterRow) -> Fate {
    // The broker-validated publisher, never a name from the body.
    let principal = match row.user_id.as_deref() {
        Some(user) => match state.store.queue_submitter(user).await {
            Ok(p) => p,
            Err(e) => return Fate::Later(e.into()),
        },
        None => None,
    };
    let Some(principal) = principal else {
        return Fate::Refused("unknown_submitter".to_owned());
    };
    match crate::intents::accept(state, &Caller(principal), &row.body).await {
        Ok((created, view)) => Fate::Stored(created, view.to_json()),
        Err(e @ (ApiError::Unavailable | ApiError::DirectoryUnavailable)) => Fate::Later(e),
        Err(e) => Fate::Refused(e.code().to_owned()),
    }
}

async fn ring(state: &AppState, queue: Queue, body: &[u8]) -> Fate {
    let Ok(rung) = Doorbell::parse(body) else {
        return Fate::NotABell;
    };
    let bell = match rung.tenant_id.as_deref() {
        Some(tenant) => Doorbell::new(tenant, rung.operation_id.as_str()).to_bytes(),
        // A bell from before bells named the tenant: rung as it was.
        None => body.to_vec(),
    };
    match state.decisions.publish(queue, &bell).await {
        Ok(()) => Fate::Rung,
        Err(e) => {
            tracing::warn!(error = %e, "a replayed doorbell could not be published");
            Fate::Later(ApiError::Unavailable)
        }
    }
}
