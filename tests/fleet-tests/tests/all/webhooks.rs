//! fleet-webhook-ingest against real Postgres, RabbitMQ and HTTP: the receiver is
//! reached over TCP, the provider simulator sends signed webhooks (duplicated, held,
//! retried), and every assertion is on the rows.

use fleet_tests::at;
use std::sync::Arc;

use fleet_broker::Queue;
use fleet_core::{AttemptOutcome, Event, Status};
use fleet_store::{PruneCursor, Transition, TransitionOutcome, WebhookOutcome};
use fleet_tests::{
    event_body, eventually, intent, now_s, webhook_secrets, BrokerProxy, SignedDelivery, TestFleet,
    WebhookIngest, OTHER_SECRET, WEBHOOK_SECRET,
};
use fleet_webhook_ingest::retention::{prune_once, Retention};
use fleet_webhook_ingest::{IngestHandler, WebhookSettings};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// Header name and value pairs sent with one delivery.
type Headers = Vec<(&'static str, String)>;

/// A secret the receiver never knows.
const STRANGER_SECRET: &str = "whsec_dGhpcmQtc2VjcmV0LWZvci10ZXN0cy0xMjM0";

/// A fleet with prepare and execute running.
async fn payments_fleet() -> TestFleet {
    let mut fleet = TestFleet::with_prepare().await;
    fleet.spawn_execute();
    fleet
}

/// An approved payment the provider answered `pending`: the row is `accepted`. Returns
/// (operation id, payment id).
async fn accepted_payment(fleet: &TestFleet) -> (String, String) {
    fleet
        .sim_fault(json!({"route": "POST /v1/payments", "kind": "pending"}))
        .await;
    let op = fleet.submit_and_approve(&intent()).await;
    let row = fleet.reaches(&op, Status::Accepted).await;
    (
        op,
        row.external_id
            .expect("accepted rows record the payment id"),
    )
}

/// An approved payment the provider committed and answers `pending` for, its answer held
/// (4 s, or until released) while its webhooks go to `ingest`: (operation id, the
/// provider's payment object).
async fn held_pending_payment(fleet: &TestFleet, ingest: &WebhookIngest) -> (String, Value) {
    fleet
        .sim_webhooks(&ingest.url(), json!({"hold_response_ms": 4_000}))
        .await;
    fleet
        .sim_fault(json!({"route": "POST /v1/payments", "kind": "pending"}))
        .await;
    let op = fleet.submit_and_approve(&intent()).await;
    let payment = fleet.sim_payment(&op).await;
    (op, payment)
}

/// The provider's payment object as a final event reports it.
fn settled(mut payment: Value, status: &str) -> Value {
    payment["status"] = json!(status);
    payment
}

async fn transitions_to(fleet: &TestFleet, op: &str, status: &str) -> Vec<fleet_store::EventRow> {
    let events = fleet.store.events(at(op)).await.unwrap();
    events
        .into_iter()
        .filter(|e| {
            e.kind == fleet_core::history::HistoryKind::Transition
                && e.to_status.map(fleet_core::Status::as_str) == Some(status)
        })
        .collect()
}

/// The operation moved to `status` exactly once, from `from`, by `actor`.
async fn moved_once(fleet: &TestFleet, op: &str, (from, status): (&str, &str), actor: &str) {
    let moved = transitions_to(fleet, op, status).await;
    assert_eq!(
        (
            moved.len(),
            moved.first().map(|e| e.actor.as_str()),
            moved
                .first()
                .and_then(|e| e.from_status.map(fleet_core::Status::as_str))
        ),
        (1, Some(actor), Some(from)),
        "{op} to {status}"
    );
}

/// The dedup table holds `event_id` alone, linked to `op` and applied.
async fn applied_alone(fleet: &TestFleet, event_id: &str, op: &str) {
    assert_eq!(
        fleet.webhook_rows().await,
        vec![(
            event_id.to_owned(),
            Some(op.to_owned()),
            Some("applied".to_owned())
        )]
    );
}

async fn wait_for_outcome(fleet: &TestFleet, event_id: &str, outcome: &str) {
    eventually(&format!("{event_id} to be {outcome}"), || async {
        fleet
            .webhook_rows()
            .await
            .into_iter()
            .any(|(id, _, o)| id == event_id && o.as_deref() == Some(outcome))
            .then_some(())
    })
    .await;
}

async fn post_raw(url: &str, headers: &[(&str, String)], body: Vec<u8>) -> StatusCode {
    let mut request = reqwest::Client::new().post(url).body(body);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    request.send().await.unwrap().status()
}

#[tokio::test]
async fn only_authentic_deliveries_pass_the_receiver_and_refused_ones_leave_no_trace() {
    let mut fleet = payments_fleet().await;
    let (op, payment_id) = accepted_payment(&fleet).await;
    // Mid-rotation: the new secret first; the provider still signs with the old one.
    let ingest = fleet
        .spawn_webhook_ingest_binary_run(&[OTHER_SECRET, WEBHOOK_SECRET])
        .await;
    let url = ingest.url();
    let payment = settled(fleet.sim_payment(&op).await, "succeeded");
    let body = |id: &str| event_body(id, "payment.succeeded", &payment);
    let http = reqwest::Client::new();

    let wrong_secret = SignedDelivery::new(
        STRANGER_SECRET,
        "evt_wrong_secret",
        body("evt_wrong_secret"),
    );
    assert_eq!(
        wrong_secret.post(&http, &url).await,
        StatusCode::UNAUTHORIZED
    );
    let mut tampered = SignedDelivery::new(WEBHOOK_SECRET, "evt_tampered", body("evt_tampered"));
    let at = tampered.body.iter().position(|&b| b == b'1').unwrap();
    tampered.body[at] = b'9';
    assert_eq!(tampered.post(&http, &url).await, StatusCode::UNAUTHORIZED);
    let mut reformatted = SignedDelivery::new(WEBHOOK_SECRET, "evt_pretty", body("evt_pretty"));
    reformatted.body =
        serde_json::to_vec_pretty(&serde_json::from_slice::<Value>(&reformatted.body).unwrap())
            .unwrap();
    assert_eq!(
        reformatted.post(&http, &url).await,
        StatusCode::UNAUTHORIZED
    );
    for (id, skew) in [("evt_old", -301), ("evt_ahead", 301)] {
        let stale = SignedDelivery::at(WEBHOOK_SECRET, id, now_s() + skew, body(id));
        assert_eq!(
            stale.post(&http, &url).await,
            StatusCode::UNAUTHORIZED,
            "{id}"
        );
    }
    let v2_only = SignedDelivery::new(WEBHOOK_SECRET, "evt_v2", body("evt_v2"));
    let v2_header = v2_only.signature.replacen("v1,", "v2,", 1);

    let good = SignedDelivery::new(WEBHOOK_SECRET, "evt_ok", body("evt_ok"));
    let headers = |id: &str, ts: String, sig: String| {
        vec![
            ("webhook-id", id.to_owned()),
            ("webhook-timestamp", ts),
            ("webhook-signature", sig),
        ]
    };
    let ts = good.timestamp.to_string();
    let cases: Vec<(&str, Headers, StatusCode)> = vec![
        (
            "no webhook-id",
            headers("x", ts.clone(), good.signature.clone())[1..].to_vec(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "no timestamp",
            vec![
                ("webhook-id", "evt_ok".into()),
                ("webhook-signature", good.signature.clone()),
            ],
            StatusCode::BAD_REQUEST,
        ),
        (
            "no signature",
            headers("evt_ok", ts.clone(), String::new())[..2].to_vec(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "non-integer timestamp",
            headers("evt_ok", format!("{ts}.5"), good.signature.clone()),
            StatusCode::BAD_REQUEST,
        ),
        (
            "dot in the id",
            headers("evt.ok", ts.clone(), good.signature.clone()),
            StatusCode::BAD_REQUEST,
        ),
        (
            "only a v2 signature",
            headers("evt_v2", v2_only.timestamp.to_string(), v2_header),
            StatusCode::UNAUTHORIZED,
        ),
        (
            "signature header over 8 KiB",
            headers(
                "evt_ok",
                ts.clone(),
                format!("{} ", good.signature).repeat(200),
            ),
            StatusCode::BAD_REQUEST,
        ),
    ];
    for (name, case_headers, expected) in cases {
        let case_body = if name == "only a v2 signature" {
            v2_only.body.clone()
        } else {
            good.body.clone()
        };
        assert_eq!(
            post_raw(&url, &case_headers, case_body).await,
            expected,
            "{name}"
        );
    }
    let crm_url = format!("{}/webhooks/crm", ingest.base_url);
    assert_eq!(good.post(&http, &crm_url).await, StatusCode::NOT_FOUND);
    let huge = SignedDelivery::new(WEBHOOK_SECRET, "evt_huge", vec![b' '; 256 * 1024 + 1]);
    assert_eq!(huge.post(&http, &url).await, StatusCode::PAYLOAD_TOO_LARGE);

    // Nothing above was stored or published: the row waits, the dedup table is empty.
    assert_eq!(fleet.row(&op).await.status, Status::Accepted);
    assert!(fleet.webhook_rows().await.is_empty());

    // The authentic one, signed with the second (older) secret, is accepted and applied.
    assert_eq!(good.post(&http, &url).await, StatusCode::NO_CONTENT);
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(row.external_id.as_deref(), Some(payment_id.as_str()));
    let broker = fleet.broker.clone();
    eventually("the webhook queue to drain", || {
        let broker = broker.clone();
        async move {
            (fleet_broker::message_count(&broker, Queue::WebhooksIngest)
                .await
                .unwrap()
                == 0)
                .then_some(())
        }
    })
    .await;
    applied_alone(&fleet, "evt_ok", &op).await;
    assert_eq!(
        fleet_broker::dead_letter_count(&fleet.broker, Queue::WebhooksIngest)
            .await
            .unwrap(),
        0
    );
    moved_once(&fleet, &op, ("accepted", "succeeded"), "webhook-ingest").await;
    fleet.stop().await;
}

#[tokio::test]
async fn the_same_event_three_times_even_concurrently_is_applied_once_and_counted_twice_as_duplicate(
) {
    let metrics = fleet_runtime::install_metrics("webhook-tests");
    let mut fleet = payments_fleet().await;
    let (op, payment_id) = accepted_payment(&fleet).await;
    let ingest = fleet.spawn_webhook_ingest().await;
    // The provider sends each event three times at once.
    fleet
        .sim_webhooks(&ingest.url(), json!({"duplicate": 2}))
        .await;
    let event_id = fleet.sim_settle(&payment_id, "succeeded").await;
    fleet.reaches(&op, Status::Succeeded).await;
    let mut outcomes = eventually("three deliveries consumed", || async {
        Some(ingest.outcomes()).filter(|o| o.len() == 3)
    })
    .await;
    outcomes.sort();
    assert_eq!(outcomes, ["duplicate", "duplicate", "new"]);
    assert_eq!(fleet.sim_webhook_statuses().await, vec![Some(204); 3]);
    applied_alone(&fleet, &event_id, &op).await;
    assert_eq!(transitions_to(&fleet, &op, "succeeded").await.len(), 1);
    let rendered = metrics.render();
    assert!(
        rendered.contains(r#"fleet_webhook_events_total{provider="payments",outcome="duplicate"}"#),
        "{rendered}"
    );
    assert!(
        rendered.contains("fleet_webhook_receive_to_apply_seconds_bucket"),
        "{rendered}"
    );

    // The same message handled three times at the same moment, straight at the store.
    let (op2, payment2) = accepted_payment(&fleet).await;
    let object = settled(fleet.sim_payment(&op2).await, "succeeded");
    assert_eq!(object["id"], payment2.as_str());
    let message =
        SignedDelivery::event("evt_direct", "payment.succeeded", &object).envelope("payments");
    let handler = Arc::new(IngestHandler::new(
        fleet.store.narrow(),
        webhook_secrets(&[WEBHOOK_SECRET]),
        WebhookSettings::default().consumer_freshness(),
    ));
    let runs: Vec<_> = (0..3)
        .map(|_| {
            let (handler, message) = (handler.clone(), message.clone());
            tokio::spawn(async move { handler.ingest(&message).await.unwrap() })
        })
        .collect();
    let mut applied = 0;
    for run in runs {
        match run.await.unwrap() {
            WebhookOutcome::Applied { to, .. } => {
                assert_eq!(to, Status::Succeeded);
                applied += 1;
            }
            WebhookOutcome::Duplicate { same_payload } => assert!(same_payload),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(applied, 1);
    assert_eq!(transitions_to(&fleet, &op2, "succeeded").await.len(), 1);
    fleet.stop().await;
}

#[tokio::test]
async fn a_succeeded_webhook_that_overtakes_the_pending_answer_wins_and_a_late_pending_changes_nothing(
) {
    let mut fleet = payments_fleet().await;
    let ingest = fleet.spawn_webhook_ingest().await;
    // The provider commits, then holds its `pending` answer while the payment settles.
    let (op, payment) = held_pending_payment(&fleet, &ingest).await;
    assert_eq!(fleet.row(&op).await.status, Status::InProgress);
    fleet
        .sim_settle(payment["id"].as_str().unwrap(), "succeeded")
        .await;
    let row = fleet.reaches(&op, Status::Succeeded).await;
    fleet.sim_release().await;

    // Then the `pending` answer arrives: execute is fenced out and only records it.
    let attempt = fleet.first_attempt_finished(&op).await;
    assert_eq!(
        (attempt.outcome, attempt.external_id.as_ref()),
        (
            Some(AttemptOutcome::Accepted),
            payment["id"].as_str().map(str::to_owned).as_ref()
        )
    );
    let after = fleet.row(&op).await;
    assert_eq!(
        (after.status, after.external_id.as_ref()),
        (Status::Succeeded, row.external_id.as_ref())
    );
    assert!(
        transitions_to(&fleet, &op, "accepted").await.is_empty(),
        "the late pending answer never moved the row"
    );
    moved_once(&fleet, &op, ("in_progress", "succeeded"), "webhook-ingest").await;

    // A late `pending` event (providers reorder too) is stored and changes nothing.
    ingest
        .deliver(&fleet.http, "evt_late_pending", "payment.pending", &payment)
        .await;
    wait_for_outcome(&fleet, "evt_late_pending", "ignored_transition").await;
    let last = fleet.row(&op).await;
    assert_eq!(
        (last.status, last.updated_at, last.escalated_at),
        (Status::Succeeded, after.updated_at, None)
    );
    assert_eq!(fleet.sim_effects(&op).await, 1);
    fleet.stop().await;
}

#[tokio::test]
async fn a_webhook_that_arrives_before_execute_recorded_the_external_id_is_applied_once() {
    let mut fleet = payments_fleet().await;
    let ingest = fleet.spawn_webhook_ingest().await;
    // The payment succeeds at once; its webhook goes out before the API answer does.
    fleet
        .sim_webhooks(&ingest.url(), json!({"hold_response_ms": 4_000}))
        .await;
    let op = fleet.submit_and_approve(&intent()).await;
    let row = fleet.reaches(&op, Status::Succeeded).await;
    let payment = fleet.sim_payment(&op).await;
    assert_eq!(row.external_id.as_deref(), payment["id"].as_str());
    let attempts = fleet.store.attempts(at(&op)).await.unwrap();
    assert!(
        attempts[0].finished_at.is_none(),
        "execute is still waiting for the provider's answer"
    );
    fleet.sim_release().await;

    let attempt = fleet.first_attempt_finished(&op).await;
    assert_eq!(
        (attempt.outcome, attempt.external_id.as_deref()),
        (Some(AttemptOutcome::Succeeded), payment["id"].as_str())
    );
    moved_once(&fleet, &op, ("in_progress", "succeeded"), "webhook-ingest").await;
    let last = fleet.row(&op).await;
    assert_eq!(
        (last.status, last.external_id.as_deref(), last.escalated_at),
        (Status::Succeeded, payment["id"].as_str(), None)
    );
    assert_eq!(
        (fleet.sim_effects(&op).await, fleet.sim_posts(&op).await),
        (1, 1)
    );
    assert_eq!(ingest.outcomes(), ["new"]);
    fleet.stop().await;
}

#[tokio::test]
async fn a_succeeded_webhook_for_a_disputed_row_changes_nothing_but_is_stored_and_escalated() {
    let mut fleet = payments_fleet().await;
    let (op, payment_id) = accepted_payment(&fleet).await;
    let ingest = fleet.spawn_webhook_ingest().await;
    fleet.sim_webhooks(&ingest.url(), json!({})).await;
    let row = fleet.row(&op).await;
    let dispute = Transition {
        reason: Some(fleet_core::Reason::Disputed),
        ..Transition::new(
            at(&op),
            Status::Accepted,
            row.fence,
            Event::OperatorDispute,
            "operator:alice",
        )
    };
    assert!(matches!(
        fleet.store.transition(dispute, None).await.unwrap(),
        TransitionOutcome::Moved {
            to: Status::Disputed,
            ..
        }
    ));
    let before = fleet.row(&op).await;

    let event_id = fleet.sim_settle(&payment_id, "succeeded").await;
    wait_for_outcome(&fleet, &event_id, "escalated").await;
    let after = fleet.row(&op).await;
    assert_eq!(
        (
            after.status,
            after.updated_at,
            after.escalated_at,
            after.fence
        ),
        (
            Status::Disputed,
            before.updated_at,
            before.escalated_at,
            before.fence
        )
    );
    let events = fleet.store.events(at(&op)).await.unwrap();
    let note = events.last().unwrap();
    assert_eq!(
        (
            note.kind.as_str(),
            note.reason.map(fleet_core::Reason::as_str),
            note.actor.as_str()
        ),
        (
            "webhook_conflict",
            Some("webhook_on_disputed"),
            "webhook-ingest"
        )
    );
    assert_eq!(
        note.evidence.as_ref().unwrap()["event_id"],
        event_id.as_str()
    );
    assert_eq!(ingest.outcomes(), ["escalated"]);
    fleet.stop().await;
}

#[tokio::test]
async fn a_webhook_contradicting_a_final_row_is_recorded_and_escalated_never_applied() {
    let mut fleet = payments_fleet().await;
    let ingest = fleet.spawn_webhook_ingest().await;
    let op = fleet.submit_and_approve(&intent()).await;
    fleet.reaches(&op, Status::Succeeded).await;
    let failed = settled(fleet.sim_payment(&op).await, "failed");
    ingest
        .deliver(&fleet.http, "evt_contradiction", "payment.failed", &failed)
        .await;
    wait_for_outcome(&fleet, "evt_contradiction", "escalated").await;
    let row = fleet.row(&op).await;
    assert_eq!(row.status, Status::Succeeded);
    assert!(row.escalated_at.is_some());
    let note = fleet.store.events(at(&op)).await.unwrap().pop().unwrap();
    assert_eq!(
        (
            note.kind.as_str(),
            note.reason.map(fleet_core::Reason::as_str)
        ),
        ("webhook_conflict", Some("webhook_contradicts_final"))
    );
    // An agreeing final event is merely noted as changing nothing.
    let agreeing = settled(failed, "succeeded");
    ingest
        .deliver(&fleet.http, "evt_agrees", "payment.succeeded", &agreeing)
        .await;
    wait_for_outcome(&fleet, "evt_agrees", "ignored_transition").await;
    fleet.stop().await;
}

#[tokio::test]
async fn a_webhook_resolves_unknown_only_when_it_matches_the_operation() {
    let mut fleet = payments_fleet().await;
    let ingest = fleet.spawn_webhook_ingest().await;
    fleet
        .sim_fault(json!({"route": "POST /v1/payments", "kind": "drop_after_commit", "times": 2}))
        .await;
    let op = fleet.submit_and_approve(&intent()).await;
    fleet.reaches(&op, Status::Unknown).await;
    let payment = settled(fleet.sim_payment(&op).await, "succeeded");

    // A matching, signed event settles an unknown operation without another call.
    let other = fleet.submit_and_approve(&intent()).await;
    fleet.reaches(&other, Status::Unknown).await;
    let other_payment = settled(fleet.sim_payment(&other).await, "succeeded");
    ingest
        .deliver(
            &fleet.http,
            "evt_settles",
            "payment.succeeded",
            &other_payment,
        )
        .await;
    let row = fleet.reaches(&other, Status::Succeeded).await;
    assert_eq!(row.external_id.as_deref(), other_payment["id"].as_str());
    assert_eq!(
        (
            fleet.sim_posts(&other).await,
            fleet.sim_effects(&other).await
        ),
        (1, 1),
        "resolved without another provider call"
    );

    let mut other_amount = payment.clone();
    other_amount["amount_minor"] = json!(payment["amount_minor"].as_i64().unwrap() + 1);
    ingest
        .deliver(
            &fleet.http,
            "evt_mismatch",
            "payment.succeeded",
            &other_amount,
        )
        .await;
    wait_for_outcome(&fleet, "evt_mismatch", "escalated").await;
    let row = fleet.row(&op).await;
    assert_eq!(
        row.status,
        Status::Unknown,
        "a webhook that does not match never resolves the operation"
    );
    assert!(row.escalated_at.is_some());

    // Once escalated it is a person's: even a matching event is only evidence for them.
    ingest
        .deliver(&fleet.http, "evt_match", "payment.succeeded", &payment)
        .await;
    wait_for_outcome(&fleet, "evt_match", "escalated").await;
    let row = fleet.row(&op).await;
    assert_eq!(row.status, Status::Unknown, "escalated means hands off");
    let noted = fleet
        .history(&op)
        .await
        .into_iter()
        .any(|e| e.reason.map(fleet_core::Reason::as_str) == Some("operation_escalated"));
    assert!(noted, "the event is in the operation's history");
    fleet.stop().await;
}

#[tokio::test]
async fn an_event_no_operation_matches_yet_is_stored_unlinked_and_applied_later() {
    let mut fleet = payments_fleet().await;
    let ingest = fleet.spawn_webhook_ingest().await;
    let (op, payment) = held_pending_payment(&fleet, &ingest).await;
    // An event that names only the provider's object id, which execute has not recorded yet.
    let mut object = settled(payment.clone(), "succeeded");
    object.as_object_mut().unwrap().remove("reference");
    ingest
        .deliver(&fleet.http, "evt_early", "payment.succeeded", &object)
        .await;
    wait_for_outcome(&fleet, "evt_early", "unlinked").await;
    assert!(
        fleet
            .store
            .unlinked_webhooks_for(at(&op))
            .await
            .unwrap()
            .is_empty(),
        "nothing links it to the operation yet"
    );

    fleet.sim_release().await;
    let row = fleet.reaches(&op, Status::Accepted).await;
    assert_eq!(row.external_id.as_deref(), payment["id"].as_str());
    let unlinked = fleet.store.unlinked_webhooks_for(at(&op)).await.unwrap();
    assert_eq!(unlinked.len(), 1);
    assert_eq!(
        (
            unlinked[0].event.event_id.as_str(),
            unlinked[0].object_id.as_deref()
        ),
        ("evt_early", payment["id"].as_str())
    );

    // What reconcile does when it looks at the row.
    let applied = fleet.store.apply_unlinked_webhooks(at(&op)).await.unwrap();
    assert_eq!(
        applied,
        vec![WebhookOutcome::Applied {
            operation_id: fleet_core::OperationId::parse(&op).unwrap(),
            tenant_id: fleet_tests::TENANT.to_owned(),
            from: Status::Accepted,
            to: Status::Succeeded
        }]
    );
    fleet.reaches(&op, Status::Succeeded).await;
    applied_alone(&fleet, "evt_early", &op).await;
    assert!(fleet
        .store
        .apply_unlinked_webhooks(at(&op))
        .await
        .unwrap()
        .is_empty());
    fleet.stop().await;
}

#[tokio::test]
async fn with_the_broker_down_the_receiver_answers_503_and_the_providers_retry_is_accepted() {
    let mut fleet = payments_fleet().await;
    let (op, payment_id) = accepted_payment(&fleet).await;
    let proxy = BrokerProxy::start(&fleet.broker).await;
    let ingest = fleet
        .spawn_webhook_ingest_with(proxy.broker_config(&fleet.broker), &[WEBHOOK_SECRET])
        .await;
    fleet.sim_webhooks(&ingest.url(), json!({})).await;
    let event_id = fleet.sim_settle(&payment_id, "succeeded").await;
    eventually("a delivery refused with 503", || async {
        fleet
            .sim_webhook_statuses()
            .await
            .contains(&Some(503))
            .then_some(())
    })
    .await;
    assert!(fleet.webhook_rows().await.is_empty());
    assert_eq!(fleet.row(&op).await.status, Status::Accepted);

    proxy.set_up(true);
    fleet.reaches(&op, Status::Succeeded).await;
    let statuses = fleet.sim_webhook_statuses().await;
    assert_eq!(
        (statuses.first(), statuses.last()),
        (Some(&Some(503)), Some(&Some(204))),
        "{statuses:?}"
    );
    applied_alone(&fleet, &event_id, &op).await;
    assert_eq!(ingest.outcomes(), ["new"]);
    fleet.stop().await;
}

#[tokio::test]
async fn retention_prunes_old_dedup_rows_in_batches_and_never_below_seven_days() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    for (i, age_days) in [40, 35, 31, 31, 45, 29, 1].into_iter().enumerate() {
        sql.execute(
            "INSERT INTO webhook_events (provider, event_id, event_type, received_at, payload_hash, outcome)
             VALUES ('payments', $1, 'payment.succeeded', now() - make_interval(days => $2), 'sha256:x', 'unlinked')",
            &[&format!("evt_{i}"), &age_days],
        )
        .await
        .unwrap();
    }
    let policy = Retention {
        older_than_s: 30 * 86_400,
        batch: 2,
        interval: std::time::Duration::from_secs(3600),
    };
    assert_eq!(
        prune_once(
            &fleet.store.narrow(),
            policy,
            &PruneCursor::new(),
            &CancellationToken::new()
        )
        .await,
        5
    );
    let left: Vec<String> = fleet
        .webhook_rows()
        .await
        .into_iter()
        .map(|(id, _, _)| id)
        .collect();
    assert_eq!(left.len(), 2);
    assert!(left.contains(&"evt_5".to_owned()) && left.contains(&"evt_6".to_owned()));
    assert!(
        fleet
            .store
            .prune_webhook_events(6 * 86_400, 10, &PruneCursor::new())
            .await
            .is_err(),
        "the store refuses a retention below 7 days"
    );
    fleet.stop().await;
}
