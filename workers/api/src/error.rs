//! Every refusal the API answers, in one place: its status, its bounded code and the
//! member at fault, answered as a problem ([`crate::problem`]). A code never quotes a
//! submitted value.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::decisions::DecisionError;
use crate::problem::Problem;
use fleet_core::Denial;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// No, a malformed, an unknown or a revoked bearer token.
    Unauthorized,
    /// A token past its `expires_at`. Told apart from `Unauthorized` (only a caller holding
    /// the whole token can learn it), so an agent knows to ask for a new one rather than
    /// suspect its configuration.
    TokenExpired,
    /// Authenticated, but not for this: `role_not_allowed`, `tenant_not_granted`,
    /// `submitter_cannot_approve`, or `supersedes_forbidden`.
    Forbidden(&'static str),
    /// No such operation among the caller's tenants (another tenant's is not found either).
    NotFound,
    /// The operation id names another snapshot.
    Conflict,
    /// A decision the operation's state does not allow now (`hash_mismatch`,
    /// `approval_expired`, `not_pending`, `already_started`, `not_allowed_in_status`,
    /// `changed_meanwhile`); nothing was written.
    Refused(&'static str),
    /// The intent breaks the contract: the prepare worker's dead-letter reason.
    Invalid {
        code: &'static str,
        field: Option<String>,
    },
    /// A query parameter is unknown or out of range; `field` is its name.
    BadQuery { field: Option<String> },
    /// A listing's cursor handed out for other tenants than the listing's (`field`:
    /// `cursor`): a position in another tenant's history is never read.
    CursorInvalid,
    /// A body sent with a content type other than JSON's.
    UnsupportedMediaType,
    /// An approval's signature does not count: `signature_invalid`, with the member at
    /// fault (`key_id`, `signature`, `expires_at`). Nothing was recorded.
    BadSignature { field: &'static str },
    /// The body is larger than an intent may be.
    Oversized,
    /// The body did not arrive in time.
    BodyTimeout,
    /// The caller's share of the wait slots, or every slot, is taken; try again shortly.
    TooManyWaiters,
    /// The caller's principal sent more requests than its rate allows.
    RateLimited { retry_after_s: u64 },
    /// Every request slot stayed taken while the request waited for one.
    Busy,
    /// Postgres did not answer; nothing was decided, the same request may be sent again.
    Unavailable,
    /// The provider's directory gave no answer about the intent's payee (429, 5xx, a
    /// timeout); nothing was stored, the same intent may be sent again.
    DirectoryUnavailable,
    /// The deployment has no evidence key (`EVIDENCE_KEY_FILE`): no bundle is signed.
    EvidenceKeyNotConfigured,
}

const RETRY_AFTER_S: HeaderValue = HeaderValue::from_static("1");
/// A provider's directory that gave no answer was already asked several times, its
/// pauses waited out: a caller waits longer than for Postgres before sending again.
const DIRECTORY_RETRY_AFTER_S: HeaderValue = HeaderValue::from_static("5");

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized | ApiError::TokenExpired => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::Conflict | ApiError::Refused(_) => StatusCode::CONFLICT,
            ApiError::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::BadQuery { .. } | ApiError::CursorInvalid | ApiError::BadSignature { .. } => {
                StatusCode::BAD_REQUEST
            }
            ApiError::Oversized => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            ApiError::TooManyWaiters | ApiError::RateLimited { .. } => {
                StatusCode::TOO_MANY_REQUESTS
            }
            ApiError::Unavailable
            | ApiError::Busy
            | ApiError::DirectoryUnavailable
            | ApiError::EvidenceKeyNotConfigured => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Unauthorized => "unauthorized",
            ApiError::TokenExpired => "token_expired",
            ApiError::Forbidden(code) => code,
            ApiError::NotFound => "not_found",
            ApiError::Conflict => "operation_id_conflict",
            ApiError::Refused(code) => code,
            ApiError::Invalid { code, .. } => code,
            ApiError::BadQuery { .. } => "invalid_query",
            ApiError::CursorInvalid => "cursor_invalid",
            ApiError::BadSignature { .. } => "signature_invalid",
            ApiError::Oversized => "oversized",
            ApiError::UnsupportedMediaType => "unsupported_media_type",
            ApiError::BodyTimeout => "body_timeout",
            ApiError::TooManyWaiters => "too_many_waiters",
            ApiError::RateLimited { .. } => "rate_limited",
            ApiError::Busy => "busy",
            ApiError::Unavailable => "unavailable",
            ApiError::DirectoryUnavailable => "payee_directory_unavailable",
            ApiError::EvidenceKeyNotConfigured => "evidence_key_not_configured",
        }
    }

    pub fn field(&self) -> Option<String> {
        match self {
            ApiError::Invalid { field, .. } => field.clone(),
            ApiError::BadQuery { field } => field.clone(),
            ApiError::CursorInvalid => Some("cursor".to_owned()),
            ApiError::BadSignature { field } => Some((*field).to_owned()),
            ApiError::Conflict => Some("operation_id".to_owned()),
            ApiError::Unauthorized
            | ApiError::TokenExpired
            | ApiError::Forbidden(_)
            | ApiError::NotFound
            | ApiError::Refused(_)
            | ApiError::Oversized
            | ApiError::UnsupportedMediaType
            | ApiError::BodyTimeout
            | ApiError::TooManyWaiters
            | ApiError::RateLimited { .. }
            | ApiError::Busy
            | ApiError::Unavailable
            | ApiError::DirectoryUnavailable
            | ApiError::EvidenceKeyNotConfigured => None,
        }
    }
}

impl ApiError {
    /// The problem this refusal is answered with (its request id is added on the way out).
    pub fn problem(&self) -> Problem {
        Problem::new(self.status(), self.code(), self.field())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = self.problem().into_response();
        let headers = response.headers_mut();
        match self {
            ApiError::Unauthorized => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            ApiError::TokenExpired => {
                // RFC 6750, section 3.1: an expired token is an `invalid_token`.
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(
                        "Bearer error=\"invalid_token\", error_description=\"the token expired\"",
                    ),
                );
            }
            ApiError::TooManyWaiters | ApiError::Busy | ApiError::Unavailable => {
                headers.insert(header::RETRY_AFTER, RETRY_AFTER_S);
            }
            ApiError::DirectoryUnavailable => {
                headers.insert(header::RETRY_AFTER, DIRECTORY_RETRY_AFTER_S);
            }
            ApiError::RateLimited { retry_after_s } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after_s));
            }
            ApiError::Forbidden(_)
            | ApiError::NotFound
            | ApiError::Conflict
            | ApiError::Refused(_)
            | ApiError::Invalid { .. }
            | ApiError::BadQuery { .. }
            | ApiError::CursorInvalid
            | ApiError::BadSignature { .. }
            | ApiError::Oversized
            | ApiError::UnsupportedMediaType
            | ApiError::BodyTimeout
            | ApiError::EvidenceKeyNotConfigured => {}
        }
        response
    }
}

impl From<Denial> for ApiError {
    fn from(d: Denial) -> Self {
        // Another tenant's operation is answered exactly like one that does not exist.
        if d.is_not_found() {
            ApiError::NotFound
        } else if d == Denial::Ambiguous {
            ApiError::Refused(d.code())
        } else {
            ApiError::Forbidden(d.code())
        }
    }
}

impl From<DecisionError> for ApiError {
    fn from(e: DecisionError) -> Self {
        match e {
            DecisionError::Denied(d) => d.into(),
            DecisionError::HashMismatch => ApiError::Refused("hash_mismatch"),
            DecisionError::ApprovalExpired => ApiError::Refused("approval_expired"),
            DecisionError::NotPending => ApiError::Refused("not_pending"),
            DecisionError::AlreadyStarted => ApiError::Refused("already_started"),
            DecisionError::NotAllowedInStatus => ApiError::Refused("not_allowed_in_status"),
            DecisionError::ChangedMeanwhile => ApiError::Refused("changed_meanwhile"),
            DecisionError::SignatureRequired => ApiError::Refused("signature_required"),
            DecisionError::SignatureInvalid(field) => ApiError::BadSignature { field },
            DecisionError::InvalidField(field) => ApiError::Invalid {
                code: "invalid_field",
                field: Some(field.to_owned()),
            },
            DecisionError::Store(e) => e.into(),
        }
    }
}

impl From<fleet_store::StoreError> for ApiError {
    fn from(e: fleet_store::StoreError) -> Self {
        // Logged once, here, where it becomes the answer.
        tracing::warn!(error = %e, "postgres failed; answering 503");
        ApiError::Unavailable
    }
}
