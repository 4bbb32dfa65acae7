//! A worker started against a database nobody migrated, tried with the real binary: it
//! says so once, as an error naming `fleetctl migrate`; `/readyz` gives the cause; it
//! takes no message off its queue (each would fail) until the database is set up, and
//! then works as usual.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use fleet_broker::Queue;
use fleet_tests::{admin_url_of, eventually, intent, op_of, TestFleet, WorkerProcess};
use futures_util::FutureExt;
use serde_json::Value;

/// The ERROR lines of `process`'s JSON log that name `fleetctl migrate`.
fn migrate_errors(process: &WorkerProcess) -> usize {
    process
        .log_text()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["level"] == "ERROR" && v.to_string().contains("fleetctl migrate"))
        .count()
}

#[tokio::test]
async fn a_worker_on_a_database_not_set_up_says_so_once_and_takes_no_work_until_it_is() {
    let fleet = TestFleet::start().await;
    // A database of this test's own, not created yet: the owner's URL, another name.
    let later = {
        let mut url = url::Url::parse(&fleet.database_url).unwrap();
        let name = format!("{}_later", url.path().trim_start_matches('/'));
        url.set_path(&name);
        url.to_string()
    };
    let outcome = AssertUnwindSafe(async {
        let seed = intent();
        fleet.submit(&seed).await;
        // As in production, as the component's own role, which `fleetctl migrate` makes
        // last, once the tables and the policies are in.
        let role = fleet_store::DbRole::of_binary("fleet-prepare").unwrap();
        let as_prepare =
            fleet_store::role_url(&later, role, role.password_from_env().as_deref()).unwrap();
        let prepare = fleet.spawn_process("fleet-prepare", &[("DATABASE_URL", &as_prepare)]);
        let admin = admin_url_of(&prepare).await;
        let http = reqwest::Client::new();
        let readyz = eventually("/readyz to give the cause", || async {
            let answer = http.get(format!("{admin}/readyz")).send().await.ok()?;
            let text = answer.text().await.ok()?;
            text.contains("does not exist").then_some(text)
        })
        .await;
        assert!(readyz.contains("fleetctl migrate"), "{readyz}");
        eventually("the error to be logged", || async {
            (migrate_errors(&prepare) > 0).then_some(())
        })
        .await;

        // A few more looks at the database pass: nothing more is said, nothing taken.
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(migrate_errors(&prepare), 1, "{}", prepare.log_text());
        assert_eq!(
            fleet_broker::message_count(&fleet.broker, Queue::IntentsPrepare)
                .await
                .unwrap(),
            1,
            "the intent was taken off the queue before the database was set up"
        );

        let migrated = fleet
            .fleetctl_with(&[("DATABASE_URL", &later)], &["migrate"])
            .await;
        assert!(
            migrated.status.success(),
            "{}",
            String::from_utf8_lossy(&migrated.stderr)
        );
        let (client, connection) = tokio_postgres::connect(&later, tokio_postgres::NoTls)
            .await
            .unwrap();
        let connection = tokio::spawn(connection);
        let op = op_of(&seed);
        eventually(
            "the intent to be stored once the database is set up",
            || async {
                let row = client
                    .query_opt("SELECT 1 FROM operations WHERE operation_id = $1", &[&op])
                    .await
                    .ok()?;
                row.map(|_| ())
            },
        )
        .await;
        drop(client);
        let _ = connection.await;
        drop(prepare);
    })
    .catch_unwind()
    .await;
    let dropped = fleet_store::drop_database(&later).await;
    fleet.stop().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    dropped.expect("the test's second database dropped");
}
