//! The `webhooks.ingest` consumer trusts nothing because of where it came from: a message
//! published straight to the queue (by anything that can reach the broker) moves no row
//! unless it carries a provider signature the consumer verifies itself. webhook-ingest
//! runs as a real process; the forgeries are published to its namespaced queue.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use fleet_broker::Queue;
use fleet_core::Status;
use fleet_tests::{
    event_body, free_addr, hash_of, intent, now_s, SignedDelivery, TestFleet, WEBHOOK_SECRET,
};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// A secret the receiver never knows.
const STRANGER_SECRET: &str = "whsec_dGhpcmQtc2VjcmV0LWZvci10ZXN0cy0xMjM0";

/// A payment the provider made but whose answer was lost: the row is `unknown`.
/// Returns (operation id, the provider's payment object).
async fn paid_but_unknown(fleet: &TestFleet) -> (String, Value) {
    fleet
        .sim_fault(json!({"route": "POST /v1/payments", "kind": "drop_after_commit"}))
        .await;
    let intent = intent();
    let op = fleet.submitted(&intent).await;
    assert!(fleet.approve(&op, &hash_of(&intent)).await.unwrap());
    fleet.reaches(&op, Status::Unknown).await;
    let payment = fleet.sim_payment(&op).await;
    assert_eq!(
        payment["status"], "succeeded",
        "the provider holds a paid payment"
    );
    (op, payment)
}

fn with_status(mut payment: Value, status: &str) -> Value {
    payment["status"] = json!(status);
    payment
}

/// The envelope the receiver published before it carried the provider's signature.
fn unsigned_envelope(event_id: &str, body: &[u8]) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "schema": "webhook.v1", "provider": "payments", "event_id": event_id,
        "received_at": "2026-11-29T22:00:00Z", "body_b64": STANDARD.encode(body),
    }))
    .unwrap()
}

/// A `webhook.v2` envelope as the receiver publishes it, for headers and a body of the
/// forger's choosing.
fn signed_envelope(id: &str, timestamp: i64, signature: &str, body: &[u8]) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "schema": "webhook.v2", "provider": "payments", "received_at": "2026-11-29T22:00:00Z",
        "headers": {"webhook-id": id, "webhook-timestamp": timestamp.to_string(), "webhook-signature": signature},
        "body_b64": STANDARD.encode(body),
    }))
    .unwrap()
}

#[tokio::test]
async fn a_forged_envelope_on_the_queue_is_dead_lettered_and_moves_nothing_while_a_signed_delivery_applies(
) {
    let mut fleet = TestFleet::with_prepare().await;
    fleet.spawn_execute();
    let (op, payment) = paid_but_unknown(&fleet).await;
    let addr = free_addr();
    let ingest = fleet.spawn_process(
        "fleet-webhook-ingest",
        &[
            ("WEBHOOK_SECRETS", WEBHOOK_SECRET),
            ("WEBHOOK_ADDR", addr.as_str()),
        ],
    );
    ingest.wait_for_log("consumer subscribed").await;

    // What a paid-but-unknown payment must never get from a forger: `payment.failed`,
    // which would let the agent propose, and pay, again.
    let failed = with_status(payment.clone(), "failed");
    let forged_body = event_body("evt_forged", "payment.failed", &failed);
    let stranger = SignedDelivery::new(
        STRANGER_SECRET,
        "evt_stranger",
        event_body("evt_stranger", "payment.failed", &failed),
    );
    // A genuine signature over a `succeeded` event, with the body swapped for `failed`.
    let genuine = SignedDelivery::new(
        WEBHOOK_SECRET,
        "evt_genuine",
        event_body("evt_genuine", "payment.succeeded", &payment),
    );
    let swapped_body = event_body("evt_genuine", "payment.failed", &failed);
    // The same genuine signature, claimed for another event id.
    let other_id_body = event_body("evt_other", "payment.failed", &failed);
    let forgeries = [
        (
            "no signature at all",
            unsigned_envelope("evt_forged", &forged_body),
        ),
        (
            "signed with a secret the fleet does not hold",
            signed_envelope(
                &stranger.id,
                stranger.timestamp,
                &stranger.signature,
                &stranger.body,
            ),
        ),
        (
            "a genuine signature over another body",
            signed_envelope(
                &genuine.id,
                genuine.timestamp,
                &genuine.signature,
                &swapped_body,
            ),
        ),
        (
            "a genuine signature under another event id",
            signed_envelope(
                "evt_other",
                genuine.timestamp,
                &genuine.signature,
                &other_id_body,
            ),
        ),
        (
            "a signature that is not v1",
            signed_envelope(
                &genuine.id,
                genuine.timestamp,
                &genuine.signature.replacen("v1,", "v2,", 1),
                &genuine.body,
            ),
        ),
        (
            "an empty signature header",
            signed_envelope(&genuine.id, now_s(), "", &genuine.body),
        ),
    ];
    for (_, message) in &forgeries {
        fleet
            .publisher
            .publish(Queue::WebhooksIngest, message)
            .await
            .expect("anyone on the broker can publish here");
    }
    let dead = fleet
        .expect_dead_letters(Queue::WebhooksIngest, forgeries.len() as u32)
        .await;
    assert_eq!(dead.len(), forgeries.len());
    for (body, reason) in &dead {
        let (case, _) = forgeries
            .iter()
            .find(|(_, m)| m == body)
            .expect("a forgery, kept byte for byte");
        assert_eq!(reason.as_deref(), Some("signature_invalid"), "{case}");
    }
    let row = fleet.row(&op).await;
    assert_eq!(
        (row.status, row.escalated_at),
        (Status::Unknown, None),
        "no forgery moved or escalated the row"
    );
    assert!(
        fleet.webhook_rows().await.is_empty(),
        "no forgery left a dedup row"
    );

    // The provider's own event, through the receiver, still settles the row.
    assert_eq!(
        genuine
            .post(&fleet.http, &format!("http://{addr}/webhooks/payments"))
            .await,
        StatusCode::NO_CONTENT
    );
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(row.external_id.as_deref(), payment["id"].as_str());
    assert_eq!(
        fleet.webhook_rows().await,
        vec![(
            "evt_genuine".to_owned(),
            Some(op.clone()),
            Some("applied".to_owned())
        )]
    );
    assert_eq!(
        (fleet.sim_posts(&op).await, fleet.sim_effects(&op).await),
        (1, 1)
    );
    fleet.stop().await;
}
