//! Nothing secret or personal reaches a log line. Canaries are planted through the full
//! flow — a card-like number in a payload field, the provider API key, a `whsec_` webhook
//! secret, a password in the database URL — while every worker runs as a real process
//! with TRACE logging; then every captured log line is scanned for them, and for any
//! 13–19 digit number that passes the Luhn check.

use fleet_broker::Queue;
use fleet_core::Status;
use fleet_provider_sim::SimConfig;
use fleet_tests::{at, eventually, free_addr, hash_of, intent, op_of, with_amount, TestFleet};
use serde_json::json;

const API_KEY: &str = "sk_live_CANARYapiKEY7731";
const DB_PASSWORD: &str = "CANARYdbPassword5150";
/// base64 of "CANARY-webhook-secret-bytes!!"
const WEBHOOK_SECRET_B64: &str = "Q0FOQVJZLXdlYmhvb2stc2VjcmV0LWJ5dGVzISE=";
const PAN: &str = "4111111111111111";

fn luhn(digits: &str) -> bool {
    let sum: u32 = digits
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, b)| {
            let d = u32::from(b - b'0');
            if i % 2 == 1 {
                let dd = d * 2;
                if dd > 9 {
                    dd - 9
                } else {
                    dd
                }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// Every number of 13 to 19 digits standing on its own (not inside a longer word such as
/// a hex hash or an id, where digit runs of that length occur by chance) that passes the
/// Luhn check: a card number by its shape.
fn card_like_numbers(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| {
            word.chars().all(|c| c.is_ascii_digit())
                && (13..=19).contains(&word.len())
                && luhn(word)
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_luhn_scan_finds_card_numbers_and_ignores_other_digits() {
    assert_eq!(
        card_like_numbers(&format!("x {PAN} y")),
        vec![PAN.to_owned()]
    );
    assert!(card_like_numbers("op_01J 1250000 4111111111111112 12345").is_empty());
    assert_eq!(
        card_like_numbers(&format!("\"pan\":\"{PAN}\",")),
        vec![PAN.to_owned()]
    );
    // A hash whose hex happens to hold a Luhn-valid run of digits is not a card number.
    assert!(card_like_numbers(
        "sha256:48b8a230027060764474c8fbd21a16311c828e7814aa545dfc7b0811946b2502"
    )
    .is_empty());
}

#[tokio::test]
async fn no_canary_reaches_any_log_line_through_the_full_flow() {
    let fleet = TestFleet::start_with_sim(SimConfig {
        api_key: API_KEY.into(),
        default_payment_status: "pending".into(),
        ..Default::default()
    })
    .await;
    let secret = format!("whsec_{WEBHOOK_SECRET_B64}");
    let webhook_addr = free_addr();
    let env = [
        ("PAYMENTS_API_KEY", API_KEY),
        ("CRM_API_KEY", API_KEY),
        ("WEBHOOK_SECRETS", secret.as_str()),
        ("WEBHOOK_ADDR", webhook_addr.as_str()),
        ("LEASE_TTL_MS", "2000"),
        ("PAYMENTS_SEARCH_LAG_MS", "200"),
        ("SWEEP_INTERVAL_MS", "200"),
        ("LOOKUP_RECHECK_MS", "200"),
        ("RUST_LOG", "trace"),
        // The test reads the refused intent from the broker's dead-letter queue itself.
        ("RELAY_KEEP_DEAD_LETTERS", "false"),
    ];
    let workers: Vec<_> = [
        "fleet-prepare",
        "fleet-execute",
        "fleet-reconcile",
        "fleet-webhook-ingest",
        "fleet-relay",
    ]
    .into_iter()
    .map(|w| {
        // Each worker's own role, with a password in its URL (the server trusts local
        // connections, so any password logs in): it must never reach a log line.
        let role = fleet_store::DbRole::of_binary(w).unwrap();
        let dsn = fleet_store::role_url(&fleet.database_url, role, Some(DB_PASSWORD)).unwrap();
        fleet.spawn_process(
            w,
            &[env.as_slice(), &[("DATABASE_URL", dsn.as_str())]].concat(),
        )
    })
    .collect();
    fleet
        .sim_post(
            "/_sim/webhooks/config",
            json!({"url": format!("http://{webhook_addr}/webhooks/payments"), "secret": secret}),
        )
        .await;

    // A payment whose beneficiary is a card number: accepted, settled, webhook applied.
    fleet
        .sim_payee(PAN, "Card holder", "KZ86 125K ZT50 0410 0100")
        .await;
    let mut carded = intent();
    carded["payload"]["beneficiary_id"] = json!(PAN);
    let carded_op = fleet.submit_and_approve(&carded).await;
    let accepted = fleet.reaches(&carded_op, Status::Accepted).await;
    fleet
        .sim_post(
            &format!("/_sim/payments/{}/settle", accepted.external_id.unwrap()),
            json!({"status": "succeeded"}),
        )
        .await;
    fleet.reaches(&carded_op, Status::Succeeded).await;

    // One the provider answers 500 after committing: unknown, then reconciled by lookup.
    let unknown = intent();
    let unknown_op = op_of(&unknown);
    fleet
        .sim_fault(
            json!({"route": "POST /v1/payments", "kind": "error_after_commit", "status": 500}),
        )
        .await;
    fleet.submit(&unknown).await;
    fleet.prepared(&unknown_op).await;
    fleet
        .approve(&unknown_op, &hash_of(&unknown))
        .await
        .unwrap();
    let store = fleet.store.clone();
    eventually("the 500 to be reconciled", || {
        let store = store.clone();
        let op = unknown_op.clone();
        async move {
            store
                .get(at(&op))
                .await
                .unwrap()
                .filter(|r| matches!(r.status, Status::Accepted | Status::Succeeded))
        }
    })
    .await;

    // A refused intent whose bad field holds the card number.
    fleet.submit(&with_amount(intent(), json!(PAN))).await;
    fleet.expect_dead_letters(Queue::IntentsPrepare, 1).await;

    // The relay published every outcome event, whose data carries the payload.
    eventually("the outbox to drain", || async {
        (fleet.outbox_backlog().await == 0).then_some(())
    })
    .await;
    let logs: Vec<(String, String)> = workers
        .iter()
        .map(|w| (w.name.clone(), w.log_text()))
        .collect();
    drop(workers);
    assert!(
        logs.iter().all(|(_, text)| text.lines().count() > 5),
        "every worker logged"
    );
    // Positive control: the scan reads real lines, which do name the operation.
    assert!(logs
        .iter()
        .any(|(name, text)| name == "fleet-execute" && text.contains(&carded_op)));
    assert!(
        logs.iter()
            .any(|(name, text)| name == "fleet-relay" && text.contains(&carded_op)),
        "the relay's TRACE lines were scanned"
    );
    let canaries = [
        API_KEY,
        DB_PASSWORD,
        secret.as_str(),
        WEBHOOK_SECRET_B64,
        PAN,
        "Bearer ",
    ];
    for (name, text) in &logs {
        for line in text.lines() {
            for canary in canaries {
                assert!(
                    !line.contains(canary),
                    "{name} logged a canary ({canary}): {line}"
                );
            }
            assert!(
                card_like_numbers(line).is_empty(),
                "{name} logged a card-like number: {line}"
            );
        }
    }
    fleet.stop().await;
}
