//! `GET /v1/operations/{id}/history`: an operation's story, the rows of its history
//! (`operation_events`) oldest first, in pages. Whoever may read the operation may read its
//! story, within the same tenants (another tenant's operation is not found, as a free id).
//!
//! Each entry is typed: what happened (`kind`), the status change if any, who did it, why,
//! and when. The rows' evidence (provider answers, directory records) stays out: it is
//! free-form, and the operation's view already carries what a caller needs of it.

use axum::extract::{Path, State};
use axum::Json;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use fleet_core::history::HistoryKind;
use fleet_core::{ApiAction, Reason, Status};
use fleet_store::EventRow;
use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;
use utoipa::{IntoParams, PartialSchema, ToSchema};

use crate::auth::Caller;
use crate::contract_enums::string_enum;
use crate::decisions::{locate, Addressed};
use crate::error::ApiError;
use crate::paging;
use crate::problem::Problem;
use crate::query_params::Params;
use crate::route_responses::{PostgresSilent, RateLimited, Unauthenticated};
use crate::state::AppState;
use crate::view_schemas::StatusName;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// Page size, 1 to 100 (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    limit: Option<String>,
    /// `next_cursor` of the previous page (never empty: leave it out for the first page).
    #[param(value_type = Option<String>, pattern = "^[A-Za-z0-9_-]+$", max_length = 256)]
    cursor: Option<String>,
    /// The operation's tenant: needed only when two of the caller's tenants hold this id
    /// (otherwise 409 `operation_id_ambiguous`).
    tenant: Option<String>,
}

/// One row of an operation's history.
#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryEntry {
    /// Its place in the history: larger is later (numbers are shared by all operations,
    /// so they have gaps).
    pub seq: i64,
    #[schema(value_type = HistoryKindName)]
    pub kind: HistoryKind,
    /// The status it left (a `transition`), else null.
    #[schema(value_type = Option<StatusName>)]
    pub from_status: Option<Status>,
    /// The status it entered (a `transition`), else null.
    #[schema(value_type = Option<StatusName>)]
    pub to_status: Option<Status>,
    /// Who wrote it: a component (`prepare`, `execute`, `reconcile`, `webhook-ingest`)
    /// or a person (`approver:<name>`, `operator:<name>`).
    pub actor: String,
    /// Why, when a reason was recorded (an error code of the API document's list).
    #[schema(value_type = Option<String>)]
    pub reason: Option<Reason>,
    #[schema(value_type = String, format = DateTime)]
    pub at: chrono::DateTime<chrono::Utc>,
}

/// What a history row records: core's [`HistoryKind`], documented as `HistoryKindName`
/// from its own list, so the document names exactly the kinds that are stored.
pub struct HistoryKindName;

impl PartialSchema for HistoryKindName {
    fn schema() -> RefOr<Schema> {
        string_enum(
            "What a history row records: the intake stored the snapshot (`prepared`), an approval of a quorum still short (`approval_recorded`), the approval that completed it (`approved`), an approval made void (`approval_voided`), the approval window closed (`approval_expired`), a status change (`transition`), handed to a person (`escalated`), a provider's event contradicted the row (`webhook_conflict`), reconcile looked the operation up (`lookup`), the post-settlement audit found the provider agreeing (`audited`).",
            HistoryKind::ALL.iter().map(|k| k.as_str().to_owned()).collect(),
        )
    }
}

impl ToSchema for HistoryKindName {}

/// One page of an operation's history, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryPage {
    pub data: Vec<HistoryEntry>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

impl HistoryEntry {
    fn of(row: EventRow) -> HistoryEntry {
        HistoryEntry {
            seq: row.id,
            kind: row.kind,
            from_status: row.from_status,
            to_status: row.to_status,
            actor: row.actor,
            reason: row.reason,
            at: row.at,
        }
    }
}

/// The cursor's text before base64url: versioned, so that a later form can be told apart.
const CURSOR_PREFIX: &str = "h1.";

fn encode_cursor(seq: i64) -> String {
    URL_SAFE_NO_PAD.encode(format!("{CURSOR_PREFIX}{seq}"))
}

fn decode_cursor(cursor: &str) -> Option<i64> {
    let text = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let seq = std::str::from_utf8(&text)
        .ok()?
        .strip_prefix(CURSOR_PREFIX)?;
    seq.parse().ok().filter(|s: &i64| *s > 0)
}

/// An operation's history, oldest first.
///
/// The same callers that may read the operation, within their tenants: an operation of
/// another tenant is not found (404), exactly like one that does not exist. Pages are cut
/// by an opaque cursor: pass the `next_cursor` of a page to get the next one; it is
/// `null` on the last page.
#[utoipa::path(
    get,
    path = "/v1/operations/{id}/history",
    tag = "operations",
    params(("id" = String, Path, description = "The operation id (`op_` + ULID)."), HistoryQuery),
    responses(
        (status = 200, description = "One page of the history.", body = HistoryPage),
        (status = 400, description = "`invalid_query`: an unknown parameter, `limit` outside 1..100, a cursor this API did not hand out.", body = Problem, content_type = "application/problem+json"),
        Unauthenticated,
        (status = 404, description = "No such operation among the caller's tenants (or in the `tenant` named).", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`operation_id_ambiguous`: two of the caller's tenants hold this id; name one with `tenant`.", body = Problem, content_type = "application/problem+json"),
        RateLimited,
        PostgresSilent,
    ),
    security(("bearer" = []))
)]
pub async fn operation_history(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    q: Result<Params<HistoryQuery>, ApiError>,
) -> Result<Json<HistoryPage>, ApiError> {
    caller.may(ApiAction::ReadOperations)?;
    let Params(q) = q?;
    let limit = paging::limit(q.limit.as_deref())?;
    let after = match q.cursor.as_deref() {
        None => None,
        Some(c) => Some(decode_cursor(c).ok_or_else(|| paging::bad_query("cursor"))?),
    };
    let (key, _) = locate(
        &state.store,
        &caller.0.actor(),
        Addressed::new(&id, q.tenant.as_deref()),
    )
    .await?;
    // One row more than asked says whether another page follows.
    let rows = state.store.events_page(key.op(), after, limit + 1).await?;
    let (rows, next_cursor) = paging::cut(rows, limit, |r| encode_cursor(r.id));
    Ok(Json(HistoryPage {
        data: rows.into_iter().map(HistoryEntry::of).collect(),
        next_cursor,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_read_back_and_garbage_is_refused() {
        assert_eq!(decode_cursor(&encode_cursor(42)), Some(42));
        for bad in [
            "",
            "xyz",
            &URL_SAFE_NO_PAD.encode("h1.-3"),
            &URL_SAFE_NO_PAD.encode("v2.5"),
        ] {
            assert_eq!(decode_cursor(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_documented_kinds_are_the_stored_ones() {
        let documented = serde_json::to_value(HistoryKindName::schema()).unwrap();
        let stored = HistoryKind::ALL.map(|k| serde_json::json!(k.as_str()));
        assert_eq!(documented["enum"], serde_json::json!(stored));
    }
}
