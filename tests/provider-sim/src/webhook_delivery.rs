//! Building, signing and sending the simulator's webhook events
//! (docs/design.md#provider-webhooks): the
//! body `{"id", "type", "created_at", "data": {"object"}}`, the headers `webhook-id`,
//! `webhook-timestamp` and `webhook-signature: v1,<base64 HMAC-SHA256(key,
//! "<id>.<timestamp>.<body>")>`, and the at-least-once delivery policy described in
//! `webhooks.rs`. Every attempt is logged for `GET /_sim/webhooks/deliveries`.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use chrono::SecondsFormat;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;
use tokio::task::JoinSet;

use crate::state::{App, SimState};
use crate::webhooks::WebhookConfig;

const MAX_ATTEMPTS: u32 = 8;
const FIRST_RETRY: Duration = Duration::from_millis(250);
const MAX_RETRY: Duration = Duration::from_secs(2);
const MIN_REORDER_WINDOW: Duration = Duration::from_millis(100);

#[derive(Debug)]
pub struct OutgoingEvent {
    pub id: String,
    pub event_type: String,
    /// The provider that sends it: what `{provider}` in the configured URL becomes.
    pub provider: &'static str,
    pub body: Vec<u8>,
}

/// Which of the simulated providers an event type comes from.
fn provider_of(event_type: &str) -> &'static str {
    if event_type.starts_with("envelope.") {
        "esign"
    } else {
        "payments"
    }
}

/// A new event about `object`, stamped with the simulator's clock.
pub fn new_event(state: &SimState, event_type: &str, object: Value) -> OutgoingEvent {
    let id = format!("evt_{}", ulid::Ulid::new());
    let body = json!({
        "id": id,
        "type": event_type,
        "created_at": state.now().to_rfc3339_opts(SecondsFormat::Secs, true),
        "data": {"object": object},
    });
    OutgoingEvent {
        id,
        event_type: event_type.to_owned(),
        provider: provider_of(event_type),
        body: serde_json::to_vec(&body).expect("an event serialises"),
    }
}

/// An event about `object`, when webhooks are configured (built under the state's lock,
/// so the event's time is the change's).
pub fn event_if_configured(
    state: &SimState,
    event_type: &str,
    object: &Value,
) -> Option<OutgoingEvent> {
    state
        .webhooks
        .config
        .is_some()
        .then(|| new_event(state, event_type, object.clone()))
}

/// Sends `event`, if there is one, once the state's lock is released; its id.
pub fn dispatch_if_any(app: &App, event: Option<OutgoingEvent>) -> Option<String> {
    let id = event.as_ref().map(|e| e.id.clone());
    if let Some(event) = event {
        dispatch(app, event);
    }
    id
}

/// Sends `event` as webhooks are configured right now; nothing when they are off.
pub fn dispatch(app: &App, event: OutgoingEvent) {
    let mut state = app.lock();
    let Some(config) = state.webhooks.config.clone() else {
        return;
    };
    if config.reorder {
        let opens_window = state.webhooks.reorder_buffer.is_empty();
        state.webhooks.reorder_buffer.push(event);
        if opens_window {
            let app = app.clone();
            tokio::spawn(async move {
                tokio::time::sleep(config.delay.max(MIN_REORDER_WINDOW)).await;
                let batch = std::mem::take(&mut app.lock().webhooks.reorder_buffer);
                // Newest first, each event fully delivered before the next one starts.
                for event in batch.into_iter().rev() {
                    deliver(&app, &config, event).await;
                }
            });
        }
        return;
    }
    drop(state);
    let app = app.clone();
    tokio::spawn(async move {
        tokio::time::sleep(config.delay).await;
        deliver(&app, &config, event).await;
    });
}

/// Every copy of the event at the same time, each retried until answered 2xx.
async fn deliver(app: &App, config: &WebhookConfig, event: OutgoingEvent) {
    let event = Arc::new(event);
    let mut copies = JoinSet::new();
    for copy in 0..=config.duplicate {
        copies.spawn(deliver_copy(
            app.clone(),
            config.clone(),
            event.clone(),
            copy,
        ));
    }
    while copies.join_next().await.is_some() {}
}

async fn deliver_copy(app: App, config: WebhookConfig, event: Arc<OutgoingEvent>, copy: u32) {
    let url = config.url.replace("{provider}", event.provider);
    let mut backoff = FIRST_RETRY;
    for attempt in 1..=MAX_ATTEMPTS {
        let timestamp = app.lock().now().timestamp();
        let sent = app
            .webhook_runtime()
            .client
            .post(&url)
            .header("content-type", "application/json")
            .header("webhook-id", &event.id)
            .header("webhook-timestamp", timestamp.to_string())
            .header(
                "webhook-signature",
                sign(&config.key, &event.id, timestamp, &event.body),
            )
            .body(event.body.clone())
            .send()
            .await;
        let (status, error) = match &sent {
            Ok(response) => (Some(response.status().as_u16()), None),
            Err(e) => (None, Some(e.to_string())),
        };
        app.lock().webhooks.log_delivery(json!({
            "event_id": event.id, "type": event.event_type, "copy": copy, "attempt": attempt,
            "status": status, "error": error,
        }));
        if status.is_some_and(|s| (200..300).contains(&s)) || attempt == MAX_ATTEMPTS {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_RETRY);
    }
}

/// `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`.
pub fn sign(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // Vector from the Standard Webhooks specification's examples.
    #[test]
    fn signs_like_the_standard_webhooks_reference() {
        let key = base64::engine::general_purpose::STANDARD
            .decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .unwrap();
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            sign(&key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }
}
