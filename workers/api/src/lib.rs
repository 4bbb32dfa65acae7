//! fleet-api: the HTTP API for agents and the people who decide on what they propose.
//! Callers are principals authenticated by bearer tokens, scoped to the tenants they were
//! granted; what each may do is decided by `fleet_core::authz`, nowhere else.
//!
//! | route | what |
//! |---|---|
//! | `POST /v1/intents` | submit an intent.v1 ([`intents`]), validated and written by the prepare worker's own intake |
//! | `GET /v1/operations/{id}` | one operation's view, optionally waiting for its decision or its end ([`operations`], [`waiters`]) |
//! | `GET /v1/operations` | the caller's operations, newest first, keyset-paginated ([`cursor`]) |
//! | `GET /v1/schemas/intent.v1.json` | the JSON Schema of intent.v1, embedded at build time ([`schemas`]) |
//! | `POST /v1/operations/{id}/approve`, `/reject`, `/resolve`, `/dispute` | decisions ([`decision_routes`] over [`decisions`], which any other door can call too) |
//! | `POST /v1/mandates`, `GET /v1/mandates`, `GET /v1/mandates/{id}`, `POST /v1/mandates/{id}/revoke`, `POST /v1/operations/{id}/approvals/revoke` | standing mandates and revocations ([`mandates`]) |
//! | `GET /v1/operations/{id}/evidence`, `GET /v1/evidence-keys` | an operation's signed evidence bundle, and the keys that sign them ([`evidence`], [`evidence_key`]) |
//! | `POST /v1/mandates/coverage` | "am I covered?": whether a mandate would approve a would-be intent ([`mandate_coverage`]) |
//! | `POST /v1/approvals/batch` | several approvals signed once ([`batch_approval`]) |
//! | `GET /openapi.json` | the OpenAPI 3.1 document, generated from these handlers ([`openapi`]) |
//! | `POST /mcp` | the same, as Model Context Protocol tools for agents ([`mcp`]) |
//! | `/console/…` | the console for approvers and operators, signed in with OpenID Connect ([`console`]) |
//!
//! Every operation is shown as the SQL function `operation_view` returns it. The API
//! holds no state of its own but the list of waiting requests and the principals' rate
//! buckets: any number of replicas may run behind a load balancer.
//!
//! What a client controls is bounded: connections and the time a request head may take
//! ([`fleet_runtime::http_server`]); the time its body may take ([`body_deadline`]); the
//! requests worked on at once, and each principal's share of them ([`request_slots`]);
//! each principal's request rate, and each source address's rate of requests without a
//! valid credential ([`rate_limit`]); and each principal's and tenant's share of the wait
//! slots ([`waiters`]). A request goes through them in this order: who it comes from
//! ([`auth::identify`], before anything is read from its body), its slot, then its
//! route, which checks the caller's role before it reads the body.

pub mod answer_schemas;
pub mod auth;
pub mod batch_approval;
pub mod body_deadline;
pub mod console;
pub mod contract_enums;
pub mod cookies;
pub mod cursor;
pub mod dead_letters;
pub mod decision_error;
pub mod decision_routes;
pub mod decisions;
pub mod error;
pub mod evidence;
pub mod evidence_key;
pub mod history;
pub mod intent_variants;
pub mod intents;
pub mod json_body;
pub mod mandate_coverage;
pub mod mandates;
pub mod mcp;
pub mod openapi;
pub mod operations;
pub mod paging;
pub mod problem;
pub mod problem_codes;
pub mod public_url;
pub mod query_params;
pub mod rate_limit;
pub mod request_id;
pub mod request_slots;
pub mod route_responses;
pub mod schemas;
mod series;
pub mod settings;
pub mod signed_approval;
pub mod state;
pub mod view_schemas;
pub mod waiters;

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::{header, Method};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use fleet_broker::Publisher;
use fleet_intake::IntakeRules;
use fleet_runtime::http_server;
use fleet_runtime::metric_names as m;
use fleet_store::ApiStore;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use decisions::{Decided, DecisionError, Decisions};
pub use settings::ApiSettings;
pub use state::AppState;
pub use waiters::Waiters;

use crate::error::ApiError;
use crate::request_id::RequestId;

/// Everything `run` needs, built by `main` (or by a test).
pub struct ApiDeps {
    pub store: ApiStore,
    /// Rings execute when an approval completes a quorum.
    pub publisher: Publisher,
    /// The capability guard's input and the quorum policies, as prepare's.
    pub intake: IntakeRules,
    pub settings: ApiSettings,
    /// Bound by `main` from `API_ADDR` (or by a test on port 0).
    pub listener: TcpListener,
    /// The console, when an OpenID Connect issuer is configured.
    pub console: Option<console::Console>,
    /// The deployment's evidence key and the earlier ones still published.
    pub evidence: evidence_key::EvidenceKeys,
}

/// The routes (the console's with `console`) and the OpenAPI document describing exactly
/// the JSON ones; every request is identified, takes one of `slots`, and has its body
/// read under `pace`.
pub fn app(
    state: AppState,
    console: Option<Arc<console::Console>>,
    slots: request_slots::Slots,
    pace: fleet_runtime::BodyPace,
) -> (Router, utoipa::openapi::OpenApi) {
    let identifying = state.clone();
    let public_url = state.public_url.to_string();
    let mcp = mcp::router(state.clone());
    let console = console::router(state.clone(), console);
    let (router, doc) = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(intents::submit_intent))
        .routes(routes!(operations::get_operation))
        .routes(routes!(operations::list_operations))
        .routes(routes!(history::operation_history))
        .routes(routes!(evidence::operation_evidence))
        .routes(routes!(evidence::evidence_keys))
        .routes(routes!(schemas::intent_v1_schema))
        .routes(routes!(decision_routes::approve_operation))
        .routes(routes!(decision_routes::reject_operation))
        .routes(routes!(decision_routes::resolve_operation))
        .routes(routes!(decision_routes::dispute_operation))
        .routes(routes!(mandates::create_mandate, mandates::list_mandates))
        .routes(routes!(mandate_coverage::mandate_coverage))
        .routes(routes!(mandates::get_mandate))
        .routes(routes!(mandates::revoke_mandate))
        .routes(routes!(mandates::revoke_approval))
        .routes(routes!(batch_approval::approve_batch))
        .routes(routes!(dead_letters::list_dead_letters))
        .routes(routes!(dead_letters::get_dead_letter))
        .routes(routes!(dead_letters::discard_dead_letter))
        .routes(routes!(dead_letters::replay_dead_letter))
        .with_state(state)
        .split_for_parts();
    let json = Arc::new(openapi::with_server(openapi::document(&doc), &public_url).to_string());
    let router = router
        .route(
            "/openapi.json",
            get(move || async move {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    json.to_string(),
                )
            }),
        )
        .merge(mcp)
        .merge(console)
        .fallback(|| async { ApiError::NotFound })
        .layer(middleware::from_fn_with_state(
            pace,
            body_deadline::pace_body,
        ))
        .layer(middleware::from_fn_with_state(
            slots,
            request_slots::take_slot,
        ))
        .layer(middleware::from_fn_with_state(identifying, auth::identify))
        .layer(middleware::from_fn(observe))
        .layer(middleware::from_fn(request_id::identify));
    (router, doc)
}

/// The route that long-polls when asked (`?wait_for=`); see [`route_label`].
const LONG_POLL_ROUTE: &str = "/v1/operations/{id}";

/// Counts, times and logs every answer by route template and status, with the request's
/// id (never the path itself, which carries an operation id, nor any other header).
///
/// `fleet_api_requests_total{route,status}` keeps the exact status (a 429 from a 503 matters
/// to whoever reads it); the duration histogram has the status class instead, so that its
/// series stay few, and its `_count` is what the dashboard and the 5xx alert count
/// requests by class with: a `status_class` label on the counter would only repeat it.
async fn observe(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let long_poll = route_label(&route, request.uri().query());
    let method = request.method().clone();
    let request_id = request
        .extensions()
        .get::<RequestId>()
        .map(|id| id.as_str().to_owned())
        .unwrap_or_default();
    let response = next.run(request).await;
    let elapsed = started.elapsed();
    let status = response.status().as_u16();
    metrics::counter!(m::API_REQUESTS_TOTAL, "route" => route.clone(), "status" => status.to_string()).increment(1);
    metrics::histogram!(
        m::API_REQUEST_DURATION_SECONDS,
        "route" => long_poll,
        "method" => method_label(&method),
        "status_class" => status_class(status),
    )
    .record(elapsed.as_secs_f64());
    tracing::info!(%method, route, status, elapsed_ms = elapsed.as_millis() as u64, request_id, "answered");
    response.into_response()
}

/// The histogram's route label: the template, and for a request that may long-poll (it
/// asks `wait_for`) the template with `?wait_for` appended. A long-poll lasts up to 60 s by
/// design; under the plain template it would drown the quantiles of the quick reads, so it
/// has a label of its own, and a latency panel leaves it out. MCP's waiting
/// `get_operation` calls cannot be told apart without reading the body: they are among
/// `/mcp`.
fn route_label(route: &str, query: Option<&str>) -> String {
    let asks_to_wait = query.is_some_and(|q| {
        q.split('&')
            .any(|pair| pair.split('=').next() == Some("wait_for"))
    });
    if route == LONG_POLL_ROUTE && asks_to_wait {
        format!("{route}?wait_for")
    } else {
        route.to_owned()
    }
}

/// The method as a bounded label: a client may send any token as its method (an extension
/// method reaches the fallback as a 404 or a 405), and each would otherwise be a series.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// `2xx`, `4xx`, `5xx`, … (a bounded label: at most five values).
fn status_class(status: u16) -> &'static str {
    match status / 100 {
        1 => "1xx",
        2 => "2xx",
        3 => "3xx",
        4 => "4xx",
        _ => "5xx",
    }
}

/// Serves the API on `listener` until `shutdown` is cancelled; waiting requests then
/// answer at once and in-flight requests finish before it returns.
pub async fn run(deps: ApiDeps, shutdown: CancellationToken) -> std::io::Result<()> {
    let public_url = deps
        .settings
        .public_url(deps.listener.local_addr()?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let caps = deps
        .settings
        .waiter_caps()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    series::series_at_zero();
    let waiters = Arc::new(Waiters::new(caps));
    let poller = tokio::spawn(waiters.clone().run(
        deps.store.clone(),
        deps.settings.wait_poll(),
        shutdown.clone(),
    ));
    let state = AppState {
        decisions: Decisions::new(deps.store.clone(), deps.publisher),
        store: deps.store,
        intake: deps.intake,
        waiters,
        rate_limits: Arc::new(rate_limit::RateLimits::new(deps.settings.rate_rule())),
        address_limits: Arc::new(rate_limit::AddressLimits::new(
            deps.settings.anonymous_rate_rule(),
        )),
        shutdown: shutdown.clone(),
        public_url,
        approval_pages: deps.console.is_some(),
        evidence: Arc::new(deps.evidence),
    };
    let slots = request_slots::Slots::new(
        deps.settings.api_max_concurrent_requests as usize,
        deps.settings.request_share(),
        deps.settings.request_queue_timeout(),
    );
    tracing::info!(public_url = %state.public_url, "api public url");
    let console = deps.console.map(Arc::new);
    let (router, _) = app(state, console, slots, deps.settings.body_pace());
    let served = http_server::serve(
        "api",
        deps.listener,
        router,
        deps.settings.connection_limits(),
        shutdown.clone(),
    )
    .await;
    shutdown.cancel();
    if let Err(e) = poller.await {
        tracing::warn!(error = %e, "the wait poller failed");
    }
    served
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_poll_has_its_own_route_label_and_other_queries_do_not() {
        let long = "/v1/operations/{id}?wait_for";
        assert_eq!(route_label(LONG_POLL_ROUTE, Some("wait_for=final")), long);
        assert_eq!(
            route_label(LONG_POLL_ROUTE, Some("timeout_s=5&wait_for=decision")),
            long
        );
        assert_eq!(route_label(LONG_POLL_ROUTE, None), LONG_POLL_ROUTE);
        assert_eq!(
            route_label(LONG_POLL_ROUTE, Some("x_wait_for=1")),
            LONG_POLL_ROUTE
        );
        // Only the operation view waits; elsewhere the parameter is refused (400), and
        // the label stays the template, so a client cannot multiply the series.
        assert_eq!(
            route_label("/v1/operations", Some("wait_for=final")),
            "/v1/operations"
        );
    }

    #[test]
    fn methods_outside_the_standard_ones_share_one_label() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::POST), "POST");
        let invented = Method::from_bytes(b"XYZ123").expect("an extension method");
        assert_eq!(method_label(&invented), "other");
        assert_eq!(method_label(&Method::TRACE), "other");
    }

    #[test]
    fn status_classes_are_the_first_digit() {
        assert_eq!(status_class(200), "2xx");
        assert_eq!(status_class(204), "2xx");
        assert_eq!(status_class(429), "4xx");
        assert_eq!(status_class(503), "5xx");
        assert_eq!(status_class(101), "1xx");
        assert_eq!(status_class(302), "3xx");
    }
}
