//! What a new user meets first: every binary's `--version`, and `fleetctl` run as a real
//! process (list and show as a person reads them, through the API, and the errors that
//! must say what to do).

use std::process::Output;

use fleet_core::Role;
use fleet_tests::{bin_dir, intent, op_of, TestFleet};
use serde_json::{json, Value};

/// Runs `fleetctl` with this database and namespace; the exit status is the caller's to
/// judge.
async fn fleetctl(database_url: &str, namespace: &str, args: &[&str]) -> Output {
    tokio::process::Command::new(bin_dir().join("fleetctl"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", database_url)
        .env("AMQP_NAMESPACE", namespace)
        .args(args)
        .output()
        .await
        .expect("run fleetctl")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn every_binary_prints_its_name_and_version() {
    for binary in [
        "fleet-prepare",
        "fleet-execute",
        "fleet-reconcile",
        "fleet-webhook-ingest",
        "fleet-relay",
        "fleet-api",
        "fleet-provider-sim",
        "fleetctl",
    ] {
        let out = std::process::Command::new(bin_dir().join(binary))
            .arg("--version")
            .env_clear()
            .output()
            .unwrap_or_else(|e| panic!("{binary}: {e} (build the binaries first)"));
        assert!(
            out.status.success(),
            "{binary} --version: {}",
            text(&out.stderr)
        );
        assert_eq!(
            text(&out.stdout).trim(),
            format!("{binary} {}", env!("CARGO_PKG_VERSION")),
            "{binary}"
        );
    }
}

#[tokio::test]
async fn list_and_show_give_amounts_in_major_units_reason_escalation_and_age() {
    let fleet = TestFleet::with_prepare().await;
    // 12,500.00 KZT (two decimals), 1,250 JPY (none), 1.250 KWD (three).
    let kzt = intent();
    let mut jpy = intent();
    jpy["payload"]["amount_minor"] = json!(1250);
    jpy["payload"]["currency"] = json!("JPY");
    let mut kwd = intent();
    kwd["payload"]["amount_minor"] = json!(1250);
    kwd["payload"]["currency"] = json!("KWD");
    for i in [&kzt, &jpy, &kwd] {
        fleet.submitted(i).await;
    }
    // The KWD one has waited three hours and was escalated with a reason.
    fleet
        .sql()
        .await
        .execute(
            "UPDATE operations SET created_at = now() - interval '3 hours', escalated_at = now(),
                    status_reason = 'lookup_failed_repeatedly' WHERE operation_id = $1",
            &[&op_of(&kwd)],
        )
        .await
        .unwrap();
    let api = fleet.spawn_api(&[]).await;
    let reader = fleet.token("alice", Role::Approver, &["org_482"]).await;
    let run = |args: &'static [&'static str]| api.fleetctl_as(&reader, &[], args);

    let out = run(&["list"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let header = table.lines().next().unwrap();
    for column in ["REASON", "AMOUNT", "ESCALATED", "AGE"] {
        assert!(header.contains(column), "{column} in {header}");
    }
    let line = |op: &str| {
        table
            .lines()
            .find(|l| l.starts_with(op))
            .unwrap_or_else(|| panic!("{op} in\n{table}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let row = line(&op_of(&kzt));
    assert!(row.windows(2).any(|w| w == ["12,500.00", "KZT"]), "{row:?}");
    assert!(!row.contains(&"yes".to_owned()), "not escalated: {row:?}");
    assert!(
        row.iter().any(|c| c
            .strip_suffix('s')
            .is_some_and(|n| n.parse::<u32>().is_ok())),
        "an age in seconds: {row:?}"
    );
    assert!(line(&op_of(&jpy)).windows(2).any(|w| w == ["1,250", "JPY"]));
    let row = line(&op_of(&kwd));
    assert!(row.windows(2).any(|w| w == ["1.250", "KWD"]), "{row:?}");
    for cell in ["lookup_failed_repeatedly", "yes", "3h"] {
        assert!(row.contains(&cell.to_owned()), "{cell} in {row:?}");
    }

    let kzt_op = op_of(&kzt);
    let out = api.fleetctl_as(&reader, &[], &["show", &kzt_op]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout)
            .lines()
            .any(|l| l.starts_with("amount") && l.ends_with("12,500.00 KZT")),
        "{}",
        text(&out.stdout)
    );

    // -o json and --json print the same page, with the stored minor units.
    let by_o: Value = serde_json::from_slice(&run(&["list", "-o", "json"]).await.stdout).unwrap();
    let by_flag: Value = serde_json::from_slice(&run(&["list", "--json"]).await.stdout).unwrap();
    assert_eq!(by_o["data"].as_array().unwrap().len(), 3);
    assert_eq!(by_o, by_flag);
    assert!(by_o["data"]
        .as_array()
        .unwrap()
        .iter()
        .any(|o| o["payload"]["amount_minor"] == json!(1250000)));
    let jpy_op = op_of(&jpy);
    let shown: Value = serde_json::from_slice(
        &api.fleetctl_as(&reader, &[], &["show", &jpy_op, "-o", "json"])
            .await
            .stdout,
    )
    .unwrap();
    assert_eq!(shown["payload"]["currency"], "JPY");

    // --status takes a status name, and says which ones there are.
    let out = run(&["list", "--status", "pending"]).await;
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("not_started"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&[
        "list",
        "--status",
        "not_started",
        "--approval-status",
        "pending",
    ])
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).lines().count(),
        4,
        "the header and the three:\n{}",
        text(&out.stdout)
    );
    fleet.stop().await;
}

#[tokio::test]
async fn reconcile_of_an_unknown_operation_is_an_error() {
    let fleet = TestFleet::start().await;
    let (db, ns) = (fleet.database_url.clone(), fleet.broker.namespace.clone());
    let absent = format!("op_{}", ulid::Ulid::new());
    let out = fleetctl(&db, &ns, &["reconcile", &absent]).await;
    assert!(
        !out.status.success(),
        "reconcile of {absent} succeeded: {}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stderr).contains(&format!("no operation {absent}")),
        "{}",
        text(&out.stderr)
    );
    fleet.stop().await;
}

#[tokio::test]
async fn a_database_without_the_schema_says_to_run_migrate() {
    // A database that exists but was never migrated, and one that does not exist.
    let base = std::env::var("TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into());
    let bare = format!(
        "{base}/fleet_t_bare_{}",
        ulid::Ulid::new().to_string().to_lowercase()
    );
    let missing = format!(
        "{base}/fleet_t_missing_{}",
        ulid::Ulid::new().to_string().to_lowercase()
    );
    fleet_store::create_database_if_missing(&bare)
        .await
        .unwrap();
    for (db, args) in [
        (&bare, &["token", "list"][..]),
        (&bare, &["key", "list"]),
        (&missing, &["principal", "list"]),
    ] {
        let out = fleetctl(db, "unused", args).await;
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(
            text(&out.stderr).contains("run `fleetctl migrate`"),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    fleet_store::drop_database(&bare).await.unwrap();
}

#[tokio::test]
async fn a_reader_that_stops_early_ends_fleetctl_quietly() {
    let fleet = TestFleet::start().await;
    for _ in 0..3 {
        fleet.submit(&intent()).await;
    }
    // `fleetctl list | head -1`: the reader takes one line and closes the pipe.
    let mut child = std::process::Command::new(bin_dir().join("fleetctl"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &fleet.database_url)
        .args(["principal", "list"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_ne!(out.status.code(), Some(101), "{stderr}");
    fleet.stop().await;
}

#[tokio::test]
async fn a_decision_without_a_token_says_where_the_token_comes_from() {
    let out = tokio::process::Command::new(bin_dir().join("fleetctl"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .args([
            "approve",
            "op_01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "--hash",
            "sha256:00",
        ])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("FLEET_TOKEN") && stderr.contains("fleetctl token create"),
        "{stderr}"
    );
}
