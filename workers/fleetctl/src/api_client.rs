//! The one HTTP client of fleet-api that people's commands share (show, list, wait and
//! the decisions), as the principal of a bearer token, scoped to a tenant when one is
//! named. Every answer that is not a success becomes a `Refusal`.

use std::time::Duration;

use anyhow::Context;
use fleet_core::{ApprovalStatus, OperationView, Status, WaitFor};
use fleet_runtime::Secret;
use reqwest::{RequestBuilder, StatusCode};
use serde_json::Value;

use crate::api_target::ApiArgs;
use crate::refusal::{Refusal, DECIDE_PATIENCE};

/// An ordinary request's bound; a long-poll adds the wait it asked for.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// An answer: its body as sent (what `-o json` prints) and parsed.
#[derive(Debug, Clone)]
pub struct Answer {
    pub body: String,
    pub json: Value,
}

impl Answer {
    /// The answer read as the operation view the API documents (core's type); an answer
    /// that is not one is an error, never read member by member as far as it goes.
    pub fn view(&self) -> anyhow::Result<OperationView> {
        OperationView::from_json(self.json.clone())
            .context("the API answered something that is not an operation view")
    }
}

/// One page's filters and position (`GET /v1/operations`).
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub status: Option<Status>,
    pub approval_status: Option<ApprovalStatus>,
    pub limit: Option<u8>,
    pub cursor: Option<String>,
}

#[derive(Debug)]
pub struct ApiClient {
    http: reqwest::Client,
    api_url: String,
    token: Secret<String>,
    tenant: Option<String>,
}

impl ApiClient {
    pub fn new(api_url: &str, token: Secret<String>) -> ApiClient {
        ApiClient {
            http: reqwest::Client::new(),
            api_url: api_url.trim_end_matches('/').to_owned(),
            token,
            tenant: None,
        }
    }

    /// The client `args` (over the config file's contexts) describe, or why there is none.
    pub fn from_args(args: &ApiArgs) -> anyhow::Result<ApiClient> {
        let target = args.target()?;
        let token = target.read_token(|var| std::env::var(var).ok())?;
        let url = url::Url::parse(&target.api_url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .with_context(|| {
                format!(
                    "the API URL {} ({}) is not an http(s) URL",
                    target.api_url, target.api_url_from
                )
            })?;
        if exposes_the_token(&url) {
            eprintln!(
                "warning: {} is plain http off this machine: the token crosses the network unencrypted",
                target.api_url
            );
        }
        Ok(ApiClient::new(&target.api_url, token).of_tenant(target.tenant.as_deref()))
    }

    /// Names the operation's tenant in every request (`?tenant=`).
    #[must_use]
    pub fn of_tenant(self, tenant: Option<&str>) -> ApiClient {
        ApiClient {
            tenant: tenant.map(str::to_owned),
            ..self
        }
    }

    fn url(&self, path: &str, query: &[(&str, String)]) -> String {
        let mut pairs = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in query {
            pairs.append_pair(k, v);
        }
        if let Some(tenant) = &self.tenant {
            pairs.append_pair("tenant", tenant);
        }
        let query = pairs.finish();
        let sep = if query.is_empty() { "" } else { "?" };
        format!("{}{path}{sep}{query}", self.api_url)
    }

    /// The operation's view, as the caller may see it.
    pub async fn operation(&self, op: &str) -> anyhow::Result<OperationView> {
        self.operation_answer(op).await?.view()
    }

    pub async fn operation_answer(&self, op: &str) -> anyhow::Result<Answer> {
        let path = operation_path(op)?;
        self.send(
            self.http.get(self.url(&path, &[])),
            &format!("reading {op}"),
            REQUEST_TIMEOUT,
        )
        .await
    }

    /// One page of the operation's history (`GET /v1/operations/{id}/history`), after
    /// `cursor` when given.
    pub async fn history_page(&self, op: &str, cursor: Option<&str>) -> anyhow::Result<Answer> {
        let path = format!("{}/history", operation_path(op)?);
        let query: Vec<(&str, String)> = cursor
            .map(|c| ("cursor", c.to_owned()))
            .into_iter()
            .collect();
        self.send(
            self.http.get(self.url(&path, &query)),
            &format!("reading the history of {op}"),
            REQUEST_TIMEOUT,
        )
        .await
    }

    /// The view once `wait_for` is over, or after `timeout_s` (at most the API's 60) as it
    /// is then.
    pub async fn wait(
        &self,
        op: &str,
        wait_for: WaitFor,
        timeout_s: u64,
    ) -> anyhow::Result<Answer> {
        let path = operation_path(op)?;
        let query = [
            ("wait_for", wait_for.as_str().to_owned()),
            ("timeout_s", timeout_s.to_string()),
        ];
        // The API answers at its timeout; allow it the time to.
        let bound = REQUEST_TIMEOUT + Duration::from_secs(timeout_s);
        self.send(
            self.http.get(self.url(&path, &query)),
            &format!("waiting for {op}"),
            bound,
        )
        .await
    }

    /// One page of the caller's operations.
    pub async fn list(&self, q: &ListQuery) -> anyhow::Result<Answer> {
        let mut query = Vec::new();
        if let Some(s) = q.status {
            query.push(("status", s.as_str().to_owned()));
        }
        if let Some(a) = q.approval_status {
            query.push(("approval_status", a.as_str().to_owned()));
        }
        if let Some(l) = q.limit {
            query.push(("limit", l.to_string()));
        }
        if let Some(c) = &q.cursor {
            query.push(("cursor", c.clone()));
        }
        let url = self.url("/v1/operations", &query);
        self.send(self.http.get(url), "listing operations", REQUEST_TIMEOUT)
            .await
    }

    /// POSTs `body` to `/v1/operations/{op}/{decision}`: the operation's view after it. An
    /// answer that says when to ask again (429, 503: nothing was decided) is ridden out,
    /// sending the same decision again after its `Retry-After`, for at most
    /// [`DECIDE_PATIENCE`] in all.
    pub async fn decide(
        &self,
        op: &str,
        decision: &str,
        body: Value,
    ) -> anyhow::Result<OperationView> {
        let path = format!("{}/{decision}", operation_path(op)?);
        let what = format!("{decision} {op}");
        let started = std::time::Instant::now();
        loop {
            let request = self.http.post(self.url(&path, &[])).json(&body);
            let error = match self.send(request, &what, REQUEST_TIMEOUT).await {
                Ok(answer) => return answer.view(),
                Err(e) => e,
            };
            let pause = error
                .downcast_ref::<Refusal>()
                .and_then(|r| r.pause_within(started.elapsed(), DECIDE_PATIENCE));
            let Some(pause) = pause else {
                return Err(error);
            };
            // On stderr: stdout is the decision's answer, which scripts read.
            eprintln!(
                "{}",
                fleet_core::visible::reveal(&format!(
                    "{error}; asking again in {}s",
                    pause.as_secs().max(1)
                ))
            );
            tokio::time::sleep(pause).await;
        }
    }

    /// GETs `path` (a route of the API, e.g. `/v1/mandates`): its answer.
    pub async fn get_path(&self, path: &str, what: &str) -> anyhow::Result<Answer> {
        self.send(self.http.get(self.url(path, &[])), what, REQUEST_TIMEOUT)
            .await
    }

    /// POSTs `body` to `path`: its answer (200 or 201).
    pub async fn post_path(&self, path: &str, body: &Value, what: &str) -> anyhow::Result<Answer> {
        self.send(
            self.http.post(self.url(path, &[])).json(body),
            what,
            REQUEST_TIMEOUT,
        )
        .await
    }

    async fn send(
        &self,
        request: RequestBuilder,
        what: &str,
        bound: Duration,
    ) -> anyhow::Result<Answer> {
        let response = request
            .bearer_auth(self.token.expose())
            .timeout(bound)
            .send()
            .await
            .with_context(|| format!("{what}: calling the API at {}", self.api_url))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok()?.trim().parse().ok())
            .map(Duration::from_secs);
        let body = response
            .text()
            .await
            .with_context(|| format!("{what}: reading the API's answer"))?;
        let json: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        if status == StatusCode::OK
            || status == StatusCode::ACCEPTED
            || status == StatusCode::CREATED
        {
            anyhow::ensure!(!json.is_null(), "{what}: the API's answer is not JSON");
            return Ok(Answer { body, json });
        }
        Err(Refusal::read(what, status.as_u16(), &json, retry_after).into())
    }
}

/// Whether a bearer token sent to `url` would cross a network in clear text: plain http
/// to anything but this machine's loopback.
fn exposes_the_token(url: &url::Url) -> bool {
    let loopback = match url.host() {
        Some(url::Host::Domain(name)) => name == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    url.scheme() == "http" && !loopback
}

/// The path of an operation; a malformed id never reaches the API (nor a URL).
fn operation_path(op: &str) -> anyhow::Result<String> {
    fleet_core::OperationId::parse(op).map_err(anyhow::Error::msg)?;
    Ok(format!("/v1/operations/{op}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_names_the_tenant_and_encodes_its_query() {
        let client = ApiClient::new("http://api:8080/", Secret::new("t".into()));
        assert_eq!(
            client.url("/v1/operations", &[]),
            "http://api:8080/v1/operations"
        );
        let scoped = client.of_tenant(Some("org 1&x"));
        assert_eq!(
            scoped.url("/v1/operations", &[("cursor", "a+b".into())]),
            "http://api:8080/v1/operations?cursor=a%2Bb&tenant=org+1%26x"
        );
        assert!(operation_path("op_01ARZ3NDEKTSV4RRFFQ69G5FAV").is_ok());
        assert!(operation_path("../intents").is_err());
    }

    #[test]
    fn only_plain_http_off_the_loopback_exposes_the_token() {
        let exposes = |u: &str| exposes_the_token(&url::Url::parse(u).unwrap());
        assert!(exposes("http://fleet.example:8080"));
        assert!(exposes("http://10.0.0.5"));
        assert!(!exposes("https://fleet.example"));
        assert!(!exposes("http://127.0.0.1:8080"));
        assert!(!exposes("http://localhost:8080"));
        assert!(!exposes("http://[::1]:8080"));
    }
}
