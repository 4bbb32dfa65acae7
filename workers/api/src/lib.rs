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
//! | `GET /openapi.json` | the OpenAPI 3.1 document, generated from these handlers ([`openapi`]) |
//! | `POST /mcp` | the same, as Model Context Protocol tools for agents ([`mcp`]) |
//! | `/console/…` | the console for approvers and operators, signed in with OpenID Connect ([`console`]) |
//!
//! Every operation is shown as the SQL function `operation_view` returns it. The API
//! holds no state of its own but the list of waiting requests and the principals' rate
//! buckets: any number of replicas may run behind a load balancer.
//!
//! What a client controls is bounded: connections, the time a request head may take,
//! and the requests worked on at once ([`fleet_runtime::http_server`],
//! [`request_slots`]); each principal's request rate ([`rate_limit`]); and each
//! principal's and tenant's share of the wait slots ([`waiters`]).

pub mod auth;
pub mod console;
pub mod cursor;
pub mod decision_routes;
pub mod decisions;
pub mod error;
pub mod intents;
pub mod mcp;
pub mod openapi;
pub mod operations;
pub mod public_url;
pub mod rate_limit;
pub mod request_slots;
pub mod schemas;
mod series;
pub mod settings;
pub mod signed_approval;
pub mod state;
pub mod waiters;

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::header;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use fleet_broker::Publisher;
use fleet_prepare::IntakeRules;
use fleet_runtime::metric_names as m;
use fleet_runtime::{http_server, RequestSlots};
use fleet_store::Store;
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

/// Everything `run` needs, built by `main` (or by a test).
pub struct ApiDeps {
    pub store: Store,
    /// Rings execute when an approval completes a quorum.
    pub publisher: Publisher,
    /// The capability guard's input and the quorum policies, as prepare's.
    pub intake: IntakeRules,
    pub settings: ApiSettings,
    /// Bound by `main` from `API_ADDR` (or by a test on port 0).
    pub listener: TcpListener,
    /// The console, when an OpenID Connect issuer is configured.
    pub console: Option<console::Console>,
}

/// The routes and the OpenAPI document describing exactly them; every request takes one
/// of `slots` first.
pub fn app(state: AppState, slots: request_slots::Slots) -> (Router, utoipa::openapi::OpenApi) {
    let mcp = mcp::router(state.clone());
    let console = console::router(state.clone());
    let (router, doc) = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(intents::submit_intent))
        .routes(routes!(operations::get_operation))
        .routes(routes!(operations::list_operations))
        .routes(routes!(schemas::intent_v1_schema))
        .routes(routes!(decision_routes::approve_operation))
        .routes(routes!(decision_routes::reject_operation))
        .routes(routes!(decision_routes::resolve_operation))
        .routes(routes!(decision_routes::dispute_operation))
        .with_state(state)
        .split_for_parts();
    let json = Arc::new(doc.to_json().expect("the OpenAPI document serialises"));
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
            slots,
            request_slots::take_slot,
        ))
        .layer(middleware::from_fn(observe));
    (router, doc)
}

/// Counts and logs every answer by route template and status (never the path itself, which
/// carries an operation id, nor any header).
async fn observe(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = request.method().clone();
    let response = next.run(request).await;
    let status = response.status().as_u16();
    metrics::counter!(m::API_REQUESTS_TOTAL, "route" => route.clone(), "status" => status.to_string()).increment(1);
    tracing::info!(%method, route, status, elapsed_ms = started.elapsed().as_millis() as u64, "answered");
    response.into_response()
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
        shutdown: shutdown.clone(),
        public_url,
        console: deps.console.map(Arc::new),
    };
    let slots = request_slots::Slots {
        slots: RequestSlots::new(deps.settings.api_max_concurrent_requests as usize),
        queue_timeout: deps.settings.request_queue_timeout(),
    };
    tracing::info!(public_url = %state.public_url, "api public url");
    let (router, _) = app(state, slots);
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
