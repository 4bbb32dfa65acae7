//! The one side-effecting request of an operation, as an adapter builds it and the API
//! client sends it: method, path, the idempotency key or version precondition, the body.

use reqwest::Method;
use serde::Serialize;
use serde_json::Value;

/// The one side-effecting request of an operation: the same on every attempt, since it is
/// built from the approved snapshot alone.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub method: Method,
    pub path: Vec<String>,
    /// `Idempotency-Key`, for a provider that deduplicates by it.
    pub idempotency_key: Option<String>,
    /// `If-Match: "<version>"`, for a conditional update by version.
    pub if_match: Option<String>,
    /// A JSON object; for a [`Encoding::Form`] request, flat, its values strings.
    pub body: Value,
    pub encoding: Encoding,
}

/// How the body is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// `application/json` (the reference protocol).
    #[default]
    Json,
    /// `application/x-www-form-urlencoded` (Stripe), nested fields already flattened
    /// into their bracketed names (`metadata[fleet_operation]`).
    Form,
}

impl Request {
    pub fn new(method: Method, path: &[&str], body: &impl Serialize) -> Request {
        Request {
            method,
            path: path.iter().map(|s| (*s).to_owned()).collect(),
            idempotency_key: None,
            if_match: None,
            body: serde_json::to_value(body).expect("a request body serialises"),
            encoding: Encoding::Json,
        }
    }

    /// The same request, its body sent form-encoded.
    pub fn as_form(self) -> Request {
        Request {
            encoding: Encoding::Form,
            ..self
        }
    }

    pub fn with_key(self, key: &str) -> Request {
        Request {
            idempotency_key: Some(key.to_owned()),
            ..self
        }
    }

    pub fn with_if_match(self, version: i64) -> Request {
        Request {
            if_match: Some(version.to_string()),
            ..self
        }
    }

    pub(crate) fn path(&self) -> Vec<&str> {
        self.path.iter().map(String::as_str).collect()
    }
}
