//! The whole HTTP surface: the provider API under `/v1` (behind the API key) and the
//! admin API under `/_sim`.

use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;

use crate::api_error::ApiError;
use crate::auth::require_api_key;
use crate::create::{create, MAX_BODY_BYTES};
use crate::envelopes::{self, Envelope};
use crate::ledger::{Payment, Refund};
use crate::reads::{get as get_one, search};
use crate::state::App;
use crate::{admin, beneficiaries, crm, orders, route::Route};

pub fn build(app: App) -> Router {
    // Paths are relative to the `/v1` nest; the route names in route.rs are the full ones.
    let v1 = Router::new()
        .route(
            sub(Route::CreatePayment),
            post(create::<Payment>).get(search::<Payment>),
        )
        .route(sub(Route::GetPayment), get(get_one::<Payment>))
        .route(
            sub(Route::CreateRefund),
            post(create::<Refund>).get(search::<Refund>),
        )
        .route(sub(Route::GetRefund), get(get_one::<Refund>))
        .route(sub(Route::CreateDeal), post(crm::create).get(crm::search))
        .route(sub(Route::GetDeal), get(crm::get).patch(crm::patch))
        .route(
            sub(Route::CreateEnvelope),
            post(create::<Envelope>).get(search::<Envelope>),
        )
        .route(sub(Route::GetEnvelope), get(get_one::<Envelope>))
        .route(sub(Route::TransitionOrder), post(orders::transition))
        .route(sub(Route::GetOrder), get(orders::get))
        .route(sub(Route::GetBeneficiary), get(beneficiaries::get))
        .fallback(|| async { ApiError::unrecognized_url().into_response() })
        .layer(from_fn_with_state(
            app.clone(),
            crate::create_hook::announce_creates,
        ))
        // After the key check (only known callers count), before anything else.
        .layer(from_fn_with_state(app.clone(), crate::rate_limit::limit))
        .layer(from_fn_with_state(app.clone(), require_api_key))
        .layer(from_fn_with_state(app.clone(), crate::traces::note));
    Router::new()
        .nest("/v1", v1)
        .merge(admin::routes())
        .merge(crate::traces::routes())
        .merge(crate::webhooks::routes())
        .merge(crm::admin_routes())
        .merge(orders::admin_routes())
        .merge(envelopes::admin_routes())
        .merge(beneficiaries::admin_routes())
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(app)
}

fn sub(route: Route) -> &'static str {
    route.path().strip_prefix("/v1").unwrap_or(route.path())
}
