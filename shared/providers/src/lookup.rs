//! Read-only lookups (search by reference, get by id) shared by the adapters. They never
//! change anything at the provider, so a caller may repeat them freely; this module does
//! not, leaving retry policy to reconcile. Like every request, each takes its provider's
//! slot first ([`Api::exchange`]).

use std::time::Duration;

use fleet_core::throttle::DEFAULT_RETRY_AFTER;
use reqwest::StatusCode;
use serde_json::Value;

use crate::api::Api;
use crate::path::UnsafeSegment;
use crate::transport::{read_body, retry_after_of};

/// Why a lookup gave no answer. None of these says anything about whether the effect exists.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    /// The request failed in transit (connect, timeout, reset).
    #[error("provider lookup failed in transit")]
    Transport(#[source] reqwest::Error),
    /// The provider answered with a status that is not an answer to the lookup.
    #[error("provider lookup answered HTTP {0}")]
    Status(u16),
    /// The provider refused the lookup for its rate (429): nothing was read; it may be
    /// asked again after `retry_after` (bounded, `fleet_core::throttle::retry_after`).
    #[error("provider lookup answered HTTP 429")]
    Throttled { retry_after: Duration },
    /// The body was unreadable, too large, not JSON or not the documented shape.
    #[error("provider lookup body unusable: {0}")]
    Body(String),
    /// The id to look up cannot be a path segment (`.`, `..`, empty): nothing was sent.
    #[error("provider lookup not sent")]
    Path(#[source] UnsafeSegment),
    /// A paged list went on past the pages a lookup reads: what it did not read may hold
    /// the effect, so nothing is concluded.
    #[error("provider list not read to its end after {0} pages")]
    Unfinished(usize),
}

/// One page of a paged list: its objects, and whether more follow.
#[derive(Debug)]
pub(crate) struct Page {
    pub objects: Vec<Value>,
    pub has_more: bool,
}

impl LookupError {
    /// The wait a lookup refused for the provider's rate asks for; `None` for any other
    /// failure.
    pub fn throttled(&self) -> Option<Duration> {
        match self {
            LookupError::Throttled { retry_after } => Some(*retry_after),
            _ => None,
        }
    }
}

/// A 429 as a lookup failure that names its wait.
fn throttled(response: &reqwest::Response) -> LookupError {
    LookupError::Throttled {
        retry_after: retry_after_of(response.headers()).unwrap_or(DEFAULT_RETRY_AFTER),
    }
}

impl Api {
    /// `GET path?key=value` → the `data` array of a list answer (`{"data": [...]}`).
    pub(crate) async fn list(
        &self,
        path: &[&str],
        key: &str,
        value: &str,
    ) -> Result<Vec<Value>, LookupError> {
        match self.get_json(path, &[(key, value)]).await? {
            Value::Object(mut object) => data(&mut object),
            _ => Err(LookupError::Body("list answer is not a JSON object".into())),
        }
    }

    /// `GET path?query…` → one page of a list answer (`{"data": [...], "has_more": …}`);
    /// a page that does not say `has_more` is the last.
    pub(crate) async fn page(
        &self,
        path: &[&str],
        query: &[(&str, &str)],
    ) -> Result<Page, LookupError> {
        let mut body = self.get_json(path, query).await?;
        let has_more = body.get("has_more").and_then(Value::as_bool) == Some(true);
        let Value::Object(object) = &mut body else {
            return Err(LookupError::Body("list answer without a data array".into()));
        };
        let objects = data(object)?;
        Ok(Page { objects, has_more })
    }

    /// `GET path?query…` → the JSON body of a 200 answer, whatever its shape (the caller
    /// reads it; a search's answer, say).
    pub(crate) async fn get_json(
        &self,
        path: &[&str],
        query: &[(&str, &str)],
    ) -> Result<Value, LookupError> {
        let request = self.get(path).map_err(LookupError::Path)?;
        let response = self.exchange(request.query(query)).await;
        let response = response.map_err(LookupError::Transport)?;
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            return Err(throttled(&response));
        }
        if response.status() != StatusCode::OK {
            return Err(LookupError::Status(response.status().as_u16()));
        }
        read_json(response).await
    }

    /// `GET path` → the object, or `None` on 404.
    pub(crate) async fn object(&self, path: &[&str]) -> Result<Option<Value>, LookupError> {
        self.object_with(path, &[]).await
    }

    /// `GET path?query…` → the object, or `None` on 404.
    pub(crate) async fn object_with(
        &self,
        path: &[&str],
        query: &[(&str, &str)],
    ) -> Result<Option<Value>, LookupError> {
        let request = self.get(path).map_err(LookupError::Path)?;
        let request = if query.is_empty() {
            request
        } else {
            request.query(query)
        };
        get_object(self.exchange(request).await).await
    }
}

/// A list answer's `data` array, taken out of it.
fn data(list: &mut serde_json::Map<String, Value>) -> Result<Vec<Value>, LookupError> {
    match list.remove("data") {
        Some(Value::Array(items)) => Ok(items),
        _ => Err(LookupError::Body("list answer without a data array".into())),
    }
}

async fn get_object(
    response: reqwest::Result<reqwest::Response>,
) -> Result<Option<Value>, LookupError> {
    let response = response.map_err(LookupError::Transport)?;
    match response.status() {
        StatusCode::OK => match read_json(response).await? {
            object @ Value::Object(_) => Ok(Some(object)),
            _ => Err(LookupError::Body(
                "object answer is not a JSON object".into(),
            )),
        },
        StatusCode::NOT_FOUND => Ok(None),
        StatusCode::TOO_MANY_REQUESTS => Err(throttled(&response)),
        other => Err(LookupError::Status(other.as_u16())),
    }
}

async fn read_json(response: reqwest::Response) -> Result<Value, LookupError> {
    let bytes = read_body(response)
        .await
        .map_err(LookupError::Transport)?
        .ok_or_else(|| LookupError::Body("response too large".into()))?;
    serde_json::from_slice(&bytes).map_err(|e| LookupError::Body(format!("not JSON: {e}")))
}
