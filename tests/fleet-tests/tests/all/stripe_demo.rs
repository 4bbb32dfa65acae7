//! `fleetctl demo --provider stripe` through the real binary, against a test fleet's
//! database and broker namespace: once with the localstripe the demo starts on its own,
//! then at the harness's localstripe (`--stripe-url`), read afterwards by the test itself.
//! One test, the runs one after the other: the demo's workers serve their admin endpoints
//! at their default addresses, which two demos at once would both want. The second run
//! keeps its own database (`--keep`) for the test to read, and the test removes it.

use fleet_tests::{bin_dir, free_addr, DemoRun, Localstripe, TestFleet};
use serde_json::Value;

/// The demo's arguments: every address free, its logs in a directory of the test's own.
fn demo_args(log_dir: &std::path::Path) -> Vec<String> {
    let mut args: Vec<String> = ["demo", "--provider", "stripe", "--timeout-s", "60"]
        .map(str::to_owned)
        .to_vec();
    for (flag, value) in [
        ("--api-addr", free_addr()),
        ("--sim-addr", free_addr()),
        ("--bin-dir", bin_dir().display().to_string()),
        ("--log-dir", log_dir.display().to_string()),
    ] {
        args.extend([flag.to_owned(), value]);
    }
    args
}

/// The demo's output, and where it ran while the test may still read it.
async fn run_demo(fleet: &TestFleet, extra: &[&str]) -> (String, Option<DemoRun>) {
    let logs = std::env::temp_dir().join(format!("fleet-stripe-demo-{}", ulid::Ulid::new()));
    let mut args = demo_args(&logs);
    args.extend(extra.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let webhook_addr = free_addr();
    let out = fleet
        .fleetctl_with(&[("WEBHOOK_ADDR", webhook_addr.as_str())], &args)
        .await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let run = DemoRun::printed(&stdout, &fleet.broker.amqp_url);
    assert!(
        out.status.success(),
        "the demo failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&logs);
    (stdout, run)
}

#[tokio::test]
async fn the_stripe_demo_leaves_one_object_per_operation_in_its_outcome() {
    let itself = TestFleet::start().await;
    let (stdout, _) = run_demo(&itself, &[]).await;
    assert!(
        stdout.contains("the Stripe double answers at http://127.0.0.1:"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Stripe objects match the fleet's outcomes for 7 of 7 operations"),
        "{stdout}"
    );
    itself.stop().await;

    let stripe = Localstripe::start().await;
    let fleet = TestFleet::start().await;
    let (stdout, run) = run_demo(&fleet, &["--stripe-url", &stripe.base_url, "--keep"]).await;
    let run = run.expect("where the demo ran");
    assert!(
        stdout.contains("Stripe objects match the fleet's outcomes for 7 of 7 operations"),
        "{stdout}"
    );
    // Read again here, from the rows and from localstripe.
    let rows = run
        .sql()
        .await
        .query(
            "SELECT operation_id, action, status, idempotency_key, external_id, error_code
             FROM operations ORDER BY operation_id",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 7);
    let mut objects = stripe.get("/v1/payment_intents?limit=100").await["data"]
        .as_array()
        .unwrap()
        .clone();
    objects.extend(stripe.all_refunds().await);
    let mut outcomes = Vec::new();
    for row in &rows {
        let (op, action, status, key): (String, String, String, String) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        let (external_id, error_code): (Option<String>, Option<String>) = (row.get(4), row.get(5));
        let carrying: Vec<&Value> = objects
            .iter()
            .filter(|o| fleet_core::stripe::operation_of(o) == Some(key.as_str()))
            .collect();
        assert_eq!(carrying.len(), 1, "{op}: {carrying:?}");
        let object = carrying[0];
        let id = object["id"].as_str().unwrap();
        // The table prints the object beside the operation.
        assert!(
            stdout.lines().any(|l| l.starts_with(&op) && l.contains(id)),
            "{op} {id}: {stdout}"
        );
        match (status.as_str(), object["status"].as_str().unwrap()) {
            ("succeeded", "succeeded") => assert_eq!(external_id.as_deref(), Some(id)),
            ("failed", "requires_payment_method") => {
                assert_eq!(action, "charge.create");
                assert_eq!(error_code.as_deref(), Some("card_declined"));
            }
            other => panic!("{op}: the fleet and Stripe disagree: {other:?}"),
        }
        outcomes.push((action, status));
    }
    let declined = outcomes
        .iter()
        .filter(|(a, s)| a == "charge.create" && s == "failed")
        .count();
    let refunded = outcomes
        .iter()
        .filter(|(a, s)| a == "refund.create" && s == "succeeded")
        .count();
    assert_eq!((declined, refunded), (1, 3), "{outcomes:?}");
    drop(run);
    fleet.stop().await;
}
