//! `GET /v1/operations/{id}/evidence`: one operation's evidence bundle, signed by the
//! deployment's evidence key ([`crate::evidence_key`]); and `GET /v1/evidence-keys`: the
//! public keys a bundle's signature may be checked against, the earlier ones included.
//!
//! The bundle is assembled by `fleet_core::evidence` from the records the owner's function
//! `fleet_operation_evidence` reads in one statement, and sent as its RFC 8785 canonical
//! text: the bytes a caller saves are the bytes a verifier canonicalizes to, whatever it
//! parses them with. Whoever may read the operation may have its bundle, within the same
//! tenants (another tenant's operation is not found).

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use fleet_core::hash::canonical_json;
use fleet_core::ApiAction;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Caller;
use crate::decisions::{locate, Addressed};
use crate::error::ApiError;
use crate::problem::Problem;
use crate::query_params::Params;
use crate::route_responses::{RateLimited, Unauthenticated};
use crate::state::AppState;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EvidenceQuery {
    /// The operation's tenant: needed only when two of the caller's tenants hold this id
    /// (otherwise 409 `operation_id_ambiguous`).
    tenant: Option<String>,
}

/// One evidence bundle (`fleet.evidence.v1`), as docs/api.md describes it: `parts` (the
/// snapshot and its hash, the policy and how it was applied, the approvals with their
/// signed statements and keys, the mandates, the attempts, the provider's object and how it
/// was confirmed, the history, the payee evidence, the operation's row), `digests` (each
/// part's SHA-256), `cannot_prove`, and the deployment's `signature` over the rest.
#[derive(Serialize, ToSchema)]
#[allow(dead_code)]
pub struct EvidenceBundle {
    /// `fleet.evidence.v1`.
    format: String,
    operation_id: String,
    tenant_id: String,
    /// When the bundle was made (UTC).
    made_at: String,
    #[schema(value_type = Object)]
    parts: serde_json::Value,
    /// `sha256:` + hex of each part's canonical JSON, by part name.
    #[schema(value_type = Object)]
    digests: serde_json::Value,
    /// What the bundle does not prove, in words.
    cannot_prove: Vec<String>,
    /// `{"algorithm":"ed25519","key_id","public_key","value"}`: the deployment's signature
    /// over the canonical JSON of the bundle without this member.
    #[schema(value_type = Object)]
    signature: serde_json::Value,
}

/// An operation's evidence bundle, signed by the deployment's evidence key.
///
/// The same callers that may read the operation, within their tenants: an operation of
/// another tenant is not found (404), exactly like one that does not exist. Check it
/// offline with `fleetctl verify` or the Python client's verifier.
#[utoipa::path(
    get,
    path = "/v1/operations/{id}/evidence",
    tag = "operations",
    params(("id" = String, Path, description = "The operation id (`op_` + ULID)."), EvidenceQuery),
    responses(
        (status = 200, description = "The signed bundle, as RFC 8785 canonical JSON.", body = EvidenceBundle),
        (status = 400, description = "`invalid_query`: an unknown parameter.", body = Problem, content_type = "application/problem+json"),
        Unauthenticated,
        (status = 404, description = "No such operation among the caller's tenants (or in the `tenant` named).", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`operation_id_ambiguous`: two of the caller's tenants hold this id; name one with `tenant`.", body = Problem, content_type = "application/problem+json"),
        RateLimited,
        (status = 503, description = "`evidence_key_not_configured`: the deployment has no evidence key (`EVIDENCE_KEY_FILE`); or `unavailable`: Postgres did not answer.", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn operation_evidence(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    q: Result<Params<EvidenceQuery>, ApiError>,
) -> Result<Response, ApiError> {
    caller.may(ApiAction::ReadOperations)?;
    let Params(q) = q?;
    let key = state
        .evidence
        .signing()
        .ok_or(ApiError::EvidenceKeyNotConfigured)?;
    let (addressed, _) = locate(
        &state.store,
        &caller.0.actor(),
        Addressed::new(&id, q.tenant.as_deref()),
    )
    .await?;
    let records = state
        .store
        .evidence_records(addressed.op())
        .await?
        .ok_or(ApiError::NotFound)?;
    let bundle = fleet_core::evidence::assemble(&records, chrono::Utc::now()).map_err(|e| {
        // The records are the database's own: one missing is a defect, said once here.
        tracing::error!(error = e, "an evidence bundle could not be assembled");
        ApiError::Unavailable
    })?;
    let signed = fleet_core::evidence::sign(bundle, key);
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        canonical_json(&signed),
    )
        .into_response())
}

/// One published evidence key.
#[derive(Debug, Serialize, ToSchema)]
pub struct EvidenceKeyEntry {
    /// `ed25519:` + the first 32 hex digits of the SHA-256 of the public key.
    pub key_id: String,
    /// `ed25519`.
    pub algorithm: String,
    /// The public key, unpadded base64url.
    pub public_key: String,
    /// When the key's file was written (for the current key: when it was generated);
    /// null when unknown.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub since: Option<chrono::DateTime<chrono::Utc>>,
    /// Whether bundles made now are signed with it (earlier keys stay published so that
    /// the bundles they signed keep verifying).
    pub current: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EvidenceKeys {
    pub data: Vec<EvidenceKeyEntry>,
}

/// The deployment's evidence keys: the one signing bundles now and the earlier ones.
///
/// Public: no token is needed, so an auditor can fetch them to check a bundle's signer
/// (a credential that is sent is still checked, as on every route).
#[utoipa::path(
    get,
    path = "/v1/evidence-keys",
    tag = "operations",
    responses(
        (status = 200, description = "Every published evidence key, the current one first (empty when none is configured).", body = EvidenceKeys),
        (status = 401, description = "A token or session was sent and is not valid (none is needed).", body = Problem, content_type = "application/problem+json"),
        RateLimited,
    )
)]
pub async fn evidence_keys(State(state): State<AppState>) -> Json<EvidenceKeys> {
    Json(EvidenceKeys {
        data: state
            .evidence
            .published()
            .iter()
            .map(|p| EvidenceKeyEntry {
                key_id: p.key.key_id().as_str().to_owned(),
                algorithm: p.key.algorithm().to_owned(),
                public_key: p.key.to_text(),
                since: p.since,
                current: p.current,
            })
            .collect(),
    })
}
