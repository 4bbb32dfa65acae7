//! Around every `POST /v1/payments` and `POST /v1/refunds`: once the create has run,
//! objects it made with a final status announce themselves by webhook, and when
//! `hold_response_ms` is set the answer waits (after the commit and the webhook) so a
//! test can make the webhook reach the fleet before the API answer does. Objects are
//! found by the request's `reference`, so even a create whose connection is dropped
//! after the commit announces its object, as a real provider would. A replayed create
//! made nothing new and announces nothing.

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;

use crate::api_error::ApiError;
use crate::create::MAX_BODY_BYTES;
use crate::ledger::{Ledger, Record};
use crate::state::{App, SimState};
use crate::webhook_delivery::{dispatch, new_event, OutgoingEvent};

#[derive(Clone, Copy)]
enum Family {
    Payment,
    Refund,
}

pub async fn announce_creates(State(app): State<App>, request: Request, next: Next) -> Response {
    let family = match (request.method(), request.uri().path()) {
        (&Method::POST, path) if path.ends_with("/payments") => Family::Payment,
        (&Method::POST, path) if path.ends_with("/refunds") => Family::Refund,
        _ => return next.run(request).await,
    };
    if app.lock().webhooks.config.is_none() {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_BODY_BYTES).await else {
        return ApiError::body_too_large().into_response();
    };
    let reference = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v.get("reference")?.as_str().map(str::to_owned));
    let release = app.webhook_runtime().release.notified();
    tokio::pin!(release);
    // Registered before the create runs, so a release sent any time after it counts.
    release.as_mut().enable();
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    let Some(reference) = reference else {
        return response;
    };
    let (made_new, events) = {
        let mut state = app.lock();
        match family {
            Family::Payment => announce(&mut state, |s| &s.payments, "payment", &reference),
            Family::Refund => announce(&mut state, |s| &s.refunds, "refund", &reference),
        }
    };
    for event in events {
        dispatch(&app, event);
    }
    let hold = app
        .lock()
        .webhooks
        .config
        .as_ref()
        .map(|c| c.hold)
        .unwrap_or_default();
    if made_new && !hold.is_zero() {
        tokio::select! {
            () = tokio::time::sleep(hold) => {}
            () = release => {}
        }
    }
    response
}

/// Marks the objects with this reference as seen; events for the new final ones.
fn announce<T: Record + Serialize>(
    state: &mut SimState,
    ledger: fn(&SimState) -> &Ledger<T>,
    family: &str,
    reference: &str,
) -> (bool, Vec<OutgoingEvent>) {
    let fresh: Vec<Value> = ledger(state)
        .with_reference(reference)
        .filter(|object| !state.webhooks.announced.contains(object.id()))
        .map(|object| serde_json::to_value(object).expect("objects serialise"))
        .collect();
    let mut events = Vec::new();
    for object in &fresh {
        let id = object["id"].as_str().unwrap_or_default().to_owned();
        state.webhooks.announced.insert(id);
        let status = object["status"].as_str().unwrap_or_default();
        if status == "succeeded" || status == "failed" {
            events.push(new_event(
                state,
                &format!("{family}.{status}"),
                object.clone(),
            ));
        }
    }
    (!fresh.is_empty(), events)
}
