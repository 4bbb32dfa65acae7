//! The error answers of the provider API: `{"error": {"type", "code"[, "param"]}}`.
//!
//! `type` and `code` are the wire contract clients branch on (docs/design.md#payments-api); `param`
//! names the offending request field, as Stripe does, to make failures readable.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub code: &'static str,
    pub param: Option<String>,
    /// A precondition's current value (`current_version` of a changed beneficiary).
    pub current_version: Option<i64>,
}

impl ApiError {
    const fn new(status: StatusCode, kind: &'static str, code: &'static str) -> Self {
        Self {
            status,
            kind,
            code,
            param: None,
            current_version: None,
        }
    }

    pub const fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "invalid_api_key",
        )
    }

    /// A validation failure of the request field `param`.
    pub fn invalid(code: &'static str, param: &str) -> Self {
        let param = Some(param.to_owned());
        Self {
            param,
            ..Self::new(StatusCode::BAD_REQUEST, "invalid_request", code)
        }
    }

    pub const fn invalid_json() -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", "invalid_json")
    }

    pub const fn body_too_large() -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request",
            "body_too_large",
        )
    }

    pub const fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "invalid_request", "resource_missing")
    }

    pub const fn unrecognized_url() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "invalid_request",
            "unrecognized_request_url",
        )
    }

    pub const fn key_required() -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "idempotency_key_required",
        )
    }

    pub const fn key_invalid() -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "idempotency_key_invalid",
        )
    }

    pub const fn key_in_use() -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "idempotency_error",
            "idempotency_key_in_use",
        )
    }

    // 400 and not 409, as Stripe: a client must not retry this, the parameters drifted.
    pub const fn key_reused() -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "idempotency_error",
            "idempotency_key_reused",
        )
    }

    /// A definitive business rejection; saved under the key like any executed request.
    pub const fn rejected(code: &'static str) -> Self {
        Self::new(StatusCode::PAYMENT_REQUIRED, "payment_rejected", code)
    }

    /// The request's precondition no longer holds: the beneficiary is at
    /// `current_version`, not the one the caller named (409, never saved under the key).
    pub fn beneficiary_changed(current_version: i64) -> Self {
        Self {
            current_version: Some(current_version),
            ..Self::new(
                StatusCode::CONFLICT,
                "precondition_failed",
                "beneficiary_changed",
            )
        }
    }

    /// Above the rate limit: refused before anything ran, saved under no key (sent with
    /// `Retry-After`).
    pub const fn rate_limited() -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            "rate_limited",
        )
    }

    /// The answer of an `error_*` fault, with the status the fault asked for.
    pub const fn simulated(status: StatusCode) -> Self {
        Self::new(status, "api_error", "simulated_fault")
    }

    /// The object is not in the state the admin request needs (409).
    pub const fn conflict(code: &'static str) -> Self {
        Self::new(StatusCode::CONFLICT, "invalid_request", code)
    }

    pub const fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "api_error",
            "internal_error",
        )
    }

    pub fn body(&self) -> Value {
        let mut error = json!({"type": self.kind, "code": self.code});
        if let Some(param) = &self.param {
            error["param"] = json!(param);
        }
        if let Some(version) = self.current_version {
            error["current_version"] = json!(version);
        }
        json!({ "error": error })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body())).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_follow_the_wire_shape() {
        assert_eq!(
            ApiError::key_reused().body(),
            json!({"error": {"type": "idempotency_error", "code": "idempotency_key_reused"}})
        );
        assert_eq!(
            ApiError::invalid("amount_too_small", "amount_minor").body(),
            json!({"error": {"type": "invalid_request", "code": "amount_too_small",
                             "param": "amount_minor"}})
        );
        assert_eq!(
            ApiError::beneficiary_changed(3).body(),
            json!({"error": {"type": "precondition_failed", "code": "beneficiary_changed",
                             "current_version": 3}})
        );
    }
}
