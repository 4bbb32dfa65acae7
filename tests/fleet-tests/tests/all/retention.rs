//! `fleetctl prune`: what retention removes and what it keeps. Published outcome events
//! past the outbox retention and webhook dedup rows past the webhook retention go; an
//! unpublished event (however old), a recent one, the operation, its history, approval
//! and attempt stay, since they are what an audit reads.

use fleet_tests::{at, hash_of, intent, two_columns, TestFleet};

/// Rows of each table the audit reads, for `op`.
async fn audit_rows(sql: &tokio_postgres::Client, op: &str) -> (i64, i64, i64, i64) {
    let count =
        |table: &'static str| format!("SELECT count(*) FROM {table} WHERE operation_id = $1");
    let mut out = [0i64; 4];
    for (i, table) in ["operations", "operation_events", "approvals", "attempts"]
        .into_iter()
        .enumerate()
    {
        out[i] = sql.query_one(&count(table), &[&op]).await.unwrap().get(0);
    }
    (out[0], out[1], out[2], out[3])
}

/// The outbox rows of `op`: (sequence, published).
async fn outbox(sql: &tokio_postgres::Client, op: &str) -> Vec<(i32, bool)> {
    two_columns(
        sql,
        "SELECT sequence, published_at IS NOT NULL FROM operation_outbox WHERE operation_id = $1 ORDER BY sequence",
        &[&op],
    )
    .await
}

#[tokio::test]
async fn prune_removes_only_what_no_audit_reads() {
    let fleet = TestFleet::with_prepare().await;
    let i = intent();
    let op = fleet.submitted(&i).await;
    fleet.approve_without_ringing(&op, &hash_of(&i)).await;
    // The claim writes the attempt and the `executing` event.
    let claim = fleet
        .store
        .claim(at(&op), 0, "test-execute", 60_000)
        .await
        .unwrap();
    assert!(matches!(claim, fleet_store::Claim::Claimed(_)), "{claim:?}");
    let sql = fleet.sql().await;
    // prepared: published two days ago; approved: published an hour ago; executing:
    // never published, written three days ago.
    sql.execute(
        "UPDATE operation_outbox SET published_at = now() - CASE sequence WHEN 1 THEN interval '2 days' ELSE interval '1 hour' END
         WHERE operation_id = $1 AND sequence IN (1, 2)",
        &[&op],
    )
    .await
    .unwrap();
    sql.execute(
        "UPDATE operation_outbox SET occurred_at = now() - interval '3 days' WHERE operation_id = $1 AND sequence = 3",
        &[&op],
    )
    .await
    .unwrap();
    assert_eq!(
        outbox(&sql, &op).await,
        vec![(1, true), (2, true), (3, false)]
    );
    for (id, age_days) in [("evt_old", 40), ("evt_recent", 10)] {
        sql.execute(
            "INSERT INTO webhook_events (provider, event_id, event_type, received_at, payload_hash, outcome)
             VALUES ('payments', $1, 'payment.succeeded', now() - make_interval(days => $2), 'sha256:x', 'unlinked')",
            &[&id, &age_days],
        )
        .await
        .unwrap();
    }
    let before = audit_rows(&sql, &op).await;
    assert_eq!(
        (before.0, before.2, before.3),
        (1, 1, 1),
        "one operation, one approval, one attempt"
    );
    assert!(before.1 >= 3, "prepared, approved, executing: {before:?}");

    // A webhook retention below the redelivery window is refused before anything goes.
    let refused = fleet
        .fleetctl_with(&[], &["prune", "--webhook-retention-s", "86400"])
        .await;
    assert!(!refused.status.success());
    assert_eq!(outbox(&sql, &op).await.len(), 3);

    let out = fleet
        .fleetctl_with(
            &[("OUTBOX_RETENTION_S", "86400")],
            &["prune", "--batch", "1"],
        )
        .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("operation_outbox (published): 1 rows older than 86400 s"),
        "{stdout}"
    );
    assert!(stdout.contains("webhook_events: 1 rows"), "{stdout}");
    assert_eq!(
        outbox(&sql, &op).await,
        vec![(2, true), (3, false)],
        "the old published event went; the recent one and the unpublished one stayed"
    );
    let webhooks: Vec<String> = sql
        .query("SELECT event_id FROM webhook_events ORDER BY event_id", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(webhooks, vec!["evt_recent".to_owned()]);
    assert_eq!(
        audit_rows(&sql, &op).await,
        before,
        "the operation, its history, approval and attempt are kept"
    );
    fleet.stop().await;
}
