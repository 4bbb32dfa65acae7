//! The e-signature API: envelopes under idempotency keys kept one hour, sent later on
//! their own (or settled through the admin route) and announced by `envelope.*` webhooks
//! on the provider's own path, found again by id or `external_ref`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::routing::post;
use axum::Router;
use fleet_provider_sim::SimConfig;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::{error_code, json_of, start, wait_until, Sim};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const DOC: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

fn envelope_body(external_ref: &str, recipient_id: &str) -> Value {
    json!({"external_ref": external_ref, "template_id": "tpl_msa_v3", "recipient_id": recipient_id, "document_sha256": DOC, "subject": "Master services agreement"})
}

async fn create(sim: &Sim, key: &str, body: &Value) -> (StatusCode, Value, bool) {
    let response = sim
        .post("/v1/envelopes", key, body)
        .await
        .expect("POST /v1/envelopes");
    let replayed = response.headers().get("idempotent-replayed").is_some();
    let (status, body) = json_of(response).await;
    (status, body, replayed)
}

/// What a receiver got: (provider path segment, event) of every delivery.
type Seen = Arc<Mutex<Vec<(String, Value)>>>;

/// A receiver that records every delivery.
async fn receiver() -> (Seen, String) {
    let seen: Seen = Arc::default();
    let app = Router::new()
        .route(
            "/webhooks/{provider}",
            post(
                |State(seen): State<Seen>,
                 Path(provider): Path<String>,
                 body: axum::body::Bytes| async move {
                    seen.lock()
                        .unwrap()
                        .push((provider, serde_json::from_slice(&body).unwrap()));
                    axum::http::StatusCode::NO_CONTENT
                },
            ),
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/webhooks/{{provider}}",
        listener.local_addr().unwrap()
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (seen, url)
}

#[tokio::test]
async fn an_envelope_is_created_once_per_key_and_a_key_lives_one_hour() {
    let sim = start(SimConfig {
        esign_auto_send: false,
        ..SimConfig::default()
    })
    .await;
    let body = envelope_body("op_c1", "cust_1042");
    let (status, first, replayed) = create(&sim, "op_c1", &body).await;
    assert_eq!(
        (status, first["status"].clone(), replayed),
        (StatusCode::CREATED, json!("created"), false)
    );
    assert!(first["id"].as_str().unwrap().starts_with("env_"));
    let (status, again, replayed) = create(&sim, "op_c1", &body).await;
    assert_eq!((status, replayed), (StatusCode::CREATED, true));
    assert_eq!(again, first, "the saved answer");
    let (status, drifted, _) = create(&sim, "op_c1", &envelope_body("op_c1", "cust_9")).await;
    assert_eq!(
        (status, error_code(&drifted)),
        (StatusCode::BAD_REQUEST, "idempotency_key_reused")
    );
    assert_eq!(sim.effects("op_c1").await["envelopes"], json!(1));
    // Past the key's hour the same request is a new envelope: why a retry past retention
    // is never made.
    sim.advance_clock(3_600).await;
    let (status, second, replayed) = create(&sim, "op_c1", &body).await;
    assert_eq!((status, replayed), (StatusCode::CREATED, false));
    assert_ne!(second["id"], first["id"]);
    assert_eq!(sim.effects("op_c1").await["envelopes"], json!(2));
    let found = json_of(sim.get("/v1/envelopes?external_ref=op_c1").await)
        .await
        .1;
    assert_eq!(found["data"].as_array().unwrap().len(), 2);
    let (status, missing, _) = create(&sim, "op_c2", &json!({"external_ref": "op_c2", "template_id": "t", "recipient_id": "r1", "document_sha256": "ABC", "subject": "s"})).await;
    assert_eq!(
        (status, error_code(&missing)),
        (StatusCode::BAD_REQUEST, "parameter_invalid")
    );
}

#[tokio::test]
async fn envelopes_are_sent_on_their_own_and_announced_on_the_providers_path() {
    let sim = start(SimConfig {
        esign_send_delay_ms: 50,
        ..SimConfig::default()
    })
    .await;
    let (seen, url) = receiver().await;
    let configured = sim
        .admin_post(
            "/_sim/webhooks/config",
            &json!({"url": url, "secret": SECRET}),
        )
        .await;
    assert_eq!(configured.status(), StatusCode::OK);
    let (_, sent, _) = create(&sim, "op_s1", &envelope_body("op_s1", "cust_1")).await;
    let (_, bounced, _) = create(&sim, "op_s2", &envelope_body("op_s2", "bounce_2")).await;
    wait_until(
        "both envelopes announced",
        Duration::from_secs(10),
        || async { seen.lock().unwrap().len() >= 2 },
    )
    .await;
    let seen = seen.lock().unwrap().clone();
    let event_of = |id: &Value| {
        seen.iter()
            .find(|(_, e)| e["data"]["object"]["id"] == *id)
            .cloned()
            .unwrap()
    };
    let (provider, event) = event_of(&sent["id"]);
    assert_eq!(
        (provider.as_str(), event["type"].clone()),
        ("esign", json!("envelope.sent"))
    );
    assert_eq!(event["data"]["object"]["external_ref"], json!("op_s1"));
    let (_, event) = event_of(&bounced["id"]);
    assert_eq!(event["type"], json!("envelope.delivery_failed"));
    assert_eq!(
        event["data"]["object"]["failure_code"],
        json!("recipient_unreachable")
    );
    let now = json_of(
        sim.get(&format!("/v1/envelopes/{}", sent["id"].as_str().unwrap()))
            .await,
    )
    .await
    .1;
    assert_eq!(now["status"], json!("sent"));
}

#[tokio::test]
async fn an_envelope_waits_to_be_settled_when_it_does_not_send_itself() {
    let sim = start(SimConfig {
        esign_auto_send: false,
        ..SimConfig::default()
    })
    .await;
    let (_, envelope, _) = create(&sim, "op_w1", &envelope_body("op_w1", "cust_1")).await;
    let id = envelope["id"].as_str().unwrap();
    let path = format!("/_sim/envelopes/{id}/settle");
    let (status, settled) = json_of(sim.admin_post(&path, &json!({"status": "sent"})).await).await;
    assert_eq!(
        (
            status,
            settled["envelope"]["status"].clone(),
            settled["event_id"].clone()
        ),
        (StatusCode::OK, json!("sent"), Value::Null)
    );
    assert_eq!(
        sim.admin_post(&path, &json!({"status": "delivery_failed"}))
            .await
            .status(),
        StatusCode::CONFLICT,
        "already sent"
    );
    assert_eq!(
        sim.admin_post(
            "/_sim/envelopes/env_none/settle",
            &json!({"status": "sent"})
        )
        .await
        .status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        sim.admin_post(&path, &json!({"status": "created"}))
            .await
            .status(),
        StatusCode::BAD_REQUEST
    );
}
