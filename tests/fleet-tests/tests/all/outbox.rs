//! The outbox in the database: which history rows become which event, sequence numbers
//! under concurrent writers, the relay's hold on an operation's head event, retention.

use fleet_tests::at;
use std::collections::BTreeSet;

use fleet_core::events::EventType;
use fleet_store::PruneCursor;
use fleet_tests::{hash_of, intent, op_of, TestFleet};

async fn prepared_fleet() -> (TestFleet, String, serde_json::Value) {
    let fleet = TestFleet::with_prepare().await;
    let i = intent();
    fleet.submitted(&i).await;
    (fleet, op_of(&i), i)
}

/// (history kind, to_status, actor, reason, the event type or None for bookkeeping).
type Case = (
    &'static str,
    Option<&'static str>,
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
);

const MAPPING: &[Case] = &[
    (
        "approval_recorded",
        None,
        "approver:bob",
        None,
        Some("approval_recorded"),
    ),
    ("approved", None, "approver:bob", None, Some("approved")),
    (
        "approval_voided",
        None,
        "access",
        Some("approver_removed"),
        Some("approval_voided"),
    ),
    (
        "approval_expired",
        None,
        "approver",
        Some("approval_expired"),
        Some("approval_expired"),
    ),
    (
        "transition",
        Some("cancelled"),
        "approver:bob",
        Some("approval_rejected"),
        Some("rejected"),
    ),
    (
        "transition",
        Some("cancelled"),
        "reconcile",
        Some("approval_expired"),
        Some("approval_expired"),
    ),
    (
        "transition",
        Some("cancelled"),
        "execute",
        Some("approval_expired"),
        Some("approval_expired"),
    ),
    (
        "transition",
        Some("cancelled"),
        "prepare",
        Some("superseded"),
        Some("superseded"),
    ),
    (
        "transition",
        Some("cancelled"),
        "execute",
        Some("policy_outdated"),
        Some("cancelled"),
    ),
    (
        "transition",
        Some("cancelled"),
        "execute",
        Some("version_conflict"),
        Some("cancelled"),
    ),
    (
        "transition",
        Some("in_progress"),
        "execute",
        None,
        Some("executing"),
    ),
    (
        "transition",
        Some("accepted"),
        "execute",
        None,
        Some("accepted"),
    ),
    (
        "transition",
        Some("unknown"),
        "execute",
        Some("timeout"),
        Some("unknown"),
    ),
    (
        "transition",
        Some("unknown"),
        "reconcile",
        Some("lease_expired"),
        Some("unknown"),
    ),
    (
        "transition",
        Some("not_started"),
        "execute",
        Some("connection_refused"),
        Some("requeued"),
    ),
    (
        "transition",
        Some("not_started"),
        "reconcile",
        Some("lookup_proved_absence"),
        Some("requeued"),
    ),
    (
        "transition",
        Some("succeeded"),
        "webhook-ingest",
        Some("webhook"),
        Some("succeeded"),
    ),
    (
        "transition",
        Some("succeeded"),
        "reconcile",
        Some("reconciled"),
        Some("succeeded"),
    ),
    (
        "transition",
        Some("failed"),
        "execute",
        Some("provider_rejected"),
        Some("failed"),
    ),
    (
        "escalated",
        Some("unknown"),
        "reconcile",
        Some("multiple_matches"),
        Some("escalated"),
    ),
    (
        "webhook_conflict",
        None,
        "webhook-ingest",
        Some("webhook_mismatch"),
        Some("escalated"),
    ),
    (
        "webhook_conflict",
        None,
        "webhook-ingest",
        Some("webhook_on_disputed"),
        None,
    ),
    ("lookup", None, "reconcile", None, None),
    (
        "transition",
        Some("succeeded"),
        "operator:dana",
        Some("operator_resolution"),
        Some("resolved"),
    ),
    (
        "transition",
        Some("failed"),
        "operator:dana",
        Some("operator_resolution"),
        Some("resolved"),
    ),
    (
        "transition",
        Some("cancelled"),
        "operator:dana",
        Some("operator_resolution"),
        Some("resolved"),
    ),
    (
        "transition",
        Some("disputed"),
        "operator:dana",
        Some("disputed"),
        Some("disputed"),
    ),
    (
        "a_kind_added_later",
        Some("succeeded"),
        "someone",
        None,
        None,
    ),
];

/// (sequence, event type) of the operation's outbox rows, in id order.
async fn outbox(fleet: &TestFleet, op: &str) -> Vec<(i32, String)> {
    let rows = fleet
        .sql()
        .await
        .query(
            "SELECT sequence, event_type FROM operation_outbox WHERE operation_id = $1 ORDER BY id",
            &[&op],
        )
        .await
        .unwrap();
    rows.iter().map(|r| (r.get(0), r.get(1))).collect()
}

/// One relay round (up to 10 events) whose broker confirms every event it is handed.
async fn relay_round(fleet: &TestFleet) -> fleet_store::Relayed {
    fleet
        .store
        .relay_outbox(
            10,
            |rows| async move { rows.iter().map(|r| r.id).collect() },
        )
        .await
        .unwrap()
}

#[tokio::test]
async fn every_history_kind_maps_to_its_documented_event_type_and_bookkeeping_to_none() {
    let (fleet, op, _) = prepared_fleet().await;
    let sql = fleet.sql().await;
    assert_eq!(
        outbox(&fleet, &op).await,
        vec![(1, "prepared".to_owned())],
        "prepare's own insert wrote the first event"
    );
    let mut expected_len = 1;
    for (kind, to, actor, reason, expected) in MAPPING {
        sql.execute(
            "INSERT INTO operation_events (operation_id, kind, to_status, fence, actor, reason) VALUES ($1, $2, $3, 0, $4, $5)",
            &[&op, kind, to, actor, reason],
        )
        .await
        .unwrap();
        let rows = outbox(&fleet, &op).await;
        match expected {
            Some(t) => {
                expected_len += 1;
                assert_eq!(
                    rows.len(),
                    expected_len,
                    "{kind}/{to:?}/{actor}/{reason:?} wrote no event"
                );
                assert_eq!(
                    rows.last().unwrap(),
                    &(expected_len as i32, (*t).to_owned()),
                    "{kind}/{to:?}/{actor}/{reason:?}"
                );
            }
            None => assert_eq!(
                rows.len(),
                expected_len,
                "{kind}/{to:?}/{actor}/{reason:?} must write no event"
            ),
        }
    }
    // Becoming unknown and escalated in one step is reported as escalated.
    sql.execute(
        "UPDATE operations SET escalated_at = now() WHERE operation_id = $1",
        &[&op],
    )
    .await
    .unwrap();
    sql.execute(
        "INSERT INTO operation_events (operation_id, kind, to_status, fence, actor, reason) VALUES ($1, 'transition', 'unknown', 1, 'execute', 'idempotency_key_reused')",
        &[&op],
    )
    .await
    .unwrap();
    assert_eq!(outbox(&fleet, &op).await.last().unwrap().1, "escalated");
    // Every documented type occurs above, and the table accepts exactly the domain's types.
    let produced: BTreeSet<String> = outbox(&fleet, &op)
        .await
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    let known: BTreeSet<String> = EventType::ALL
        .iter()
        .map(|t| t.as_str().to_owned())
        .collect();
    assert_eq!(produced, known);
    let bad = sql
        .execute(
            "INSERT INTO operation_outbox (operation_id, event_key, sequence, event_type, tenant_id, history_id, occurred_at, data) VALUES ($1, $1, 999, 'teleported', 't', 0, now(), '{}')",
            &[&op],
        )
        .await;
    assert!(
        bad.is_err(),
        "an event type the domain does not know is refused"
    );
    fleet.stop().await;
}

#[tokio::test]
async fn one_statement_of_several_history_rows_writes_each_its_event_in_history_order() {
    let fleet = TestFleet::with_prepare().await;
    let (a, b, c) = (intent(), intent(), intent());
    for i in [&a, &b, &c] {
        fleet.submitted(i).await;
    }
    let (a, b, c) = (op_of(&a), op_of(&b), op_of(&c));
    let sql = fleet.sql().await;
    let before = fleet
        .count("SELECT coalesce(max(id), 0) FROM operation_outbox")
        .await;
    // Rows given out of id order; a bookkeeping row among them; two rows of one operation.
    sql.execute(
        "INSERT INTO operation_events (operation_id, kind, to_status, fence, actor, reason, signed_in_with)
         SELECT op, kind, to_status, 0, actor, reason, signed_in_with FROM (VALUES
             ($3, 'escalated', 'unknown', 'reconcile', 'stuck', NULL),
             ($1, 'approval_recorded', NULL, 'approver:bob', NULL, 'token'),
             ($2, 'lookup', NULL, 'reconcile', NULL, NULL),
             ($1, 'escalated', 'unknown', 'reconcile', 'stuck', NULL)
         ) AS v(op, kind, to_status, actor, reason, signed_in_with)",
        &[&a, &b, &c],
    )
    .await
    .unwrap();
    let rows = sql
        .query(
            "SELECT x.operation_id, x.sequence, x.event_type, x.data, x.history_id, h.kind,
                    x.data - 'sequence' - 'approval' = operation_view(o)
             FROM operation_outbox x
             JOIN operation_events h ON h.id = x.history_id
             JOIN operations o ON o.operation_id = x.operation_id AND o.tenant_id = x.tenant_id
             WHERE x.id > $1 ORDER BY x.id",
            &[&before],
        )
        .await
        .unwrap();
    let got: Vec<(String, i32, String)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(
        got,
        vec![
            (c.clone(), 2, "escalated".to_owned()),
            (a.clone(), 2, "approval_recorded".to_owned()),
            (a.clone(), 3, "escalated".to_owned()),
        ],
        "one event per typed history row, none for the lookup, in the order the rows were written"
    );
    let history: Vec<i64> = rows.iter().map(|r| r.get(4)).collect();
    assert!(
        history.windows(2).all(|w| w[0] < w[1]),
        "outbox ids follow history ids: {history:?}"
    );
    for r in &rows {
        let data: serde_json::Value = r.get(3);
        assert_eq!(data["sequence"], serde_json::json!(r.get::<_, i32>(1)));
        assert_eq!(
            data["operation_id"],
            serde_json::json!(r.get::<_, String>(0))
        );
        assert!(
            r.get::<_, bool>(6),
            "the rest of the data is the operation's whole view as the statement left it: {data}"
        );
        let approval = &data["approval"];
        if r.get::<_, String>(5) == "approval_recorded" {
            assert_eq!(
                approval,
                &serde_json::json!({"by": "bob", "signed": false, "signed_in_with": "token"})
            );
        } else {
            assert!(
                approval.is_null(),
                "only an approver's event says who: {data}"
            );
        }
    }
    // A statement that writes no typed history row writes no event.
    sql.execute(
        "INSERT INTO operation_events (operation_id, kind, fence, actor)
         SELECT $1, 'lookup', 0, 'reconcile' WHERE false",
        &[&b],
    )
    .await
    .unwrap();
    assert_eq!(
        fleet
            .count(&format!(
                "SELECT count(*) FROM operation_outbox WHERE id > {before}"
            ))
            .await,
        3
    );
    fleet.stop().await;
}

#[tokio::test]
async fn concurrent_writers_of_one_operation_draw_distinct_sequences_in_commit_order() {
    let (fleet, op, _) = prepared_fleet().await;
    let writers = 16;
    let mut tasks = Vec::new();
    for i in 0..writers {
        let (url, op) = (fleet.database_url.clone(), op.clone());
        tasks.push(tokio::spawn(async move {
            let (mut c, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(conn);
            let tx = c.transaction().await.unwrap();
            // No lock taken first: the numbering trigger must serialise the writers itself.
            tx.execute(
                "INSERT INTO operation_events (operation_id, kind, to_status, fence, actor, reason) VALUES ($1, 'escalated', 'unknown', 0, 'reconcile', $2)",
                &[&op, &format!("writer_{i}")],
            )
            .await
            .unwrap();
            tx.batch_execute("SELECT pg_sleep(0.02)").await.unwrap();
            tx.commit().await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let rows = outbox(&fleet, &op).await;
    let sequences: Vec<i32> = rows.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        sequences,
        (1..=writers + 1).collect::<Vec<i32>>(),
        "dense, distinct, and in id (commit) order"
    );
    // The history keeps each number next to the change it reports.
    let numbered = fleet.count(&format!("SELECT count(DISTINCT event_sequence) FROM operation_events WHERE operation_id = '{op}'")).await;
    assert_eq!(numbered, i64::from(writers + 1));
    fleet.stop().await;
}

#[tokio::test]
async fn a_second_relay_never_takes_the_next_event_of_an_operation_whose_head_the_first_holds() {
    let (fleet, op, i) = prepared_fleet().await;
    let store = fleet.store.clone();
    let (f, o, hash) = (&fleet, &op, hash_of(&i));
    let first = fleet
        .store
        .relay_outbox(10, |rows| async move {
            assert_eq!(
                rows.iter().map(|r| r.event.sequence).collect::<Vec<_>>(),
                vec![1]
            );
            // While the first relay holds `prepared`, the operation is approved.
            assert!(f.approve(o, &hash).await.unwrap());
            let second = store
                .relay_outbox(10, |rows| async move {
                    panic!("the second relay was handed {rows:?}")
                })
                .await
                .unwrap();
            assert_eq!(
                second.taken, 0,
                "prepared is held, approved is not a head yet"
            );
            rows.iter().map(|r| r.id).collect()
        })
        .await
        .unwrap();
    assert_eq!(first.published, vec![EventType::Prepared]);
    // Once the first commit marked `prepared` published, `approved` is the head.
    let next = fleet
        .store
        .relay_outbox(10, |rows| async move {
            assert_eq!(
                rows.iter()
                    .map(|r| (r.event.sequence, r.event.event_type))
                    .collect::<Vec<_>>(),
                vec![(2, EventType::Approved)]
            );
            Vec::new() // the broker confirmed nothing
        })
        .await
        .unwrap();
    assert_eq!((next.taken, next.published.len()), (1, 0));
    // Unconfirmed means unpublished: the next round is handed the same event again.
    let again = relay_round(&fleet).await;
    assert_eq!(again.published, vec![EventType::Approved]);
    assert_eq!(fleet.outbox_backlog().await, 0);
    fleet.stop().await;
}

#[tokio::test]
async fn one_round_takes_only_the_head_of_each_operation() {
    let fleet = TestFleet::with_prepare().await;
    let (a, b) = (intent(), intent());
    for i in [&a, &b] {
        fleet.submit_and_approve(i).await;
    }
    let mut rounds = Vec::new();
    loop {
        let r = fleet
            .store
            .relay_outbox(10, |rows| async move {
                let heads: Vec<(String, i32)> = rows
                    .iter()
                    .map(|r| (r.event.operation_id.clone(), r.event.sequence))
                    .collect();
                let ops: BTreeSet<&String> = heads.iter().map(|(op, _)| op).collect();
                assert_eq!(
                    ops.len(),
                    heads.len(),
                    "two events of one operation in one batch: {heads:?}"
                );
                rows.iter().map(|r| r.id).collect()
            })
            .await
            .unwrap();
        if r.taken == 0 {
            break;
        }
        rounds.push(r.published);
    }
    assert_eq!(
        rounds,
        vec![vec![EventType::Prepared; 2], vec![EventType::Approved; 2]]
    );
    fleet.stop().await;
}

#[tokio::test]
async fn retention_deletes_only_published_events_older_than_the_retention() {
    let (fleet, op, i) = prepared_fleet().await;
    fleet.approve(&op, &hash_of(&i)).await.unwrap();
    // prepared published long ago, approved just now; a third event never published.
    // A round takes the head of each operation's queue: two rounds publish both.
    relay_round(&fleet).await;
    relay_round(&fleet).await;
    let sql = fleet.sql().await;
    sql.execute("UPDATE operation_outbox SET published_at = now() - interval '2 hours' WHERE operation_id = $1 AND sequence = 1", &[&op]).await.unwrap();
    fleet
        .store
        .reject(at(&op), &fleet_tests::decider("bob"), "changed my mind")
        .await
        .unwrap();
    sql.execute("UPDATE operation_outbox SET occurred_at = now() - interval '3 hours' WHERE operation_id = $1 AND sequence = 3", &[&op]).await.unwrap();
    let cursor = PruneCursor::new();
    assert_eq!(
        fleet.store.prune_outbox(3_600, 100, &cursor).await.unwrap(),
        1
    );
    assert_eq!(
        outbox(&fleet, &op).await,
        vec![(2, "approved".to_owned()), (3, "rejected".to_owned())]
    );
    assert_eq!(
        fleet.store.prune_outbox(0, 100, &cursor).await.unwrap(),
        1,
        "retention 0 deletes every published event"
    );
    assert_eq!(
        outbox(&fleet, &op).await,
        vec![(3, "rejected".to_owned())],
        "an unpublished event is never deleted"
    );
    assert!(fleet.store.prune_outbox(0, 0, &cursor).await.is_err());
    fleet.stop().await;
}

/// Index pages of the published events' index read so far, with the store's connection's
/// pending statistics flushed first (a pool of one: the connection that pruned).
async fn published_index_pages(store: &fleet_store::Store, sql: &tokio_postgres::Client) -> i64 {
    store
        .pooled_session()
        .await
        .unwrap()
        .simple_query("SELECT pg_stat_force_next_flush()")
        .await
        .unwrap();
    sql.query_one(
        "SELECT idx_blks_hit + idx_blks_read FROM pg_statio_user_indexes
         WHERE indexrelname = 'operation_outbox_published'",
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

/// The fleet runs no vacuum, so a deleted event's index entry stays: a batch that looked
/// for the oldest events from the start of the index walked past everything deleted
/// before it. With the cursor a batch reads about what it deletes.
#[tokio::test]
async fn a_retention_batch_starts_where_the_last_ended_not_at_every_entry_deleted_before() {
    let (fleet, op, _) = prepared_fleet().await;
    let sql = fleet.sql().await;
    let copy = |published_at: &'static str| {
        format!(
            "INSERT INTO operation_outbox (operation_id, event_key, sequence, event_type, tenant_id,
                                           history_id, occurred_at, data, published_at)
             SELECT operation_id, event_key, (SELECT max(sequence) FROM operation_outbox) + g,
                    event_type, tenant_id, history_id, occurred_at, data, {published_at}
             FROM operation_outbox, generate_series(1, $2::int) g
             WHERE operation_id = $1 AND sequence = 1"
        )
    };
    let old = copy("now() - interval '2 days' + g * interval '1 ms'");
    sql.execute(&old, &[&op, &20_000i32]).await.unwrap();
    let store = fleet_store::Store::connect(&fleet.database_url, 1).unwrap();
    let cursor = PruneCursor::new();
    let mut deleted = 0;
    loop {
        let n = store.prune_outbox(86_400, 1_000, &cursor).await.unwrap();
        deleted += n;
        if n < 1_000 {
            break;
        }
    }
    assert_eq!(deleted, 20_000);

    // One more event past the retention, newer than the last deleted: found from the
    // cursor after a descent and a leaf or two.
    let later = copy("now() - interval '1 day 1 hour'");
    sql.execute(&later, &[&op, &1i32]).await.unwrap();
    let before = published_index_pages(&store, &sql).await;
    assert_eq!(store.prune_outbox(86_400, 1_000, &cursor).await.unwrap(), 1);
    let from_cursor = published_index_pages(&store, &sql).await - before;

    // The same batch from the start of the index walks the 20,000 dead entries.
    sql.execute(&later, &[&op, &1i32]).await.unwrap();
    let before = published_index_pages(&store, &sql).await;
    let fresh = PruneCursor::new();
    assert_eq!(store.prune_outbox(86_400, 1_000, &fresh).await.unwrap(), 1);
    let from_start = published_index_pages(&store, &sql).await - before;
    assert!(
        from_cursor <= 5 && from_start >= 20,
        "index pages read: {from_cursor} from the cursor, {from_start} from the start"
    );
    store.close();
    fleet.stop().await;
}

/// The relay polls; nothing in the database notifies it. A transaction that calls
/// `pg_notify` (or NOTIFY) takes a cluster-wide lock at commit and holds it through the
/// commit's flush, so if the outbox trigger, or any function a writer runs, notified,
/// every transaction writing an event would commit one after the other again.
#[tokio::test]
async fn no_function_of_the_schema_notifies_so_writing_commits_never_queue_on_its_lock() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    let functions: i64 = sql
        .query_one(
            "SELECT count(*) FROM pg_proc WHERE pronamespace = 'public'::regnamespace",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(functions > 0, "the schema's functions are where this looks");
    let notifying: Vec<String> = fleet_tests::first_column(
        &sql,
        "SELECT proname FROM pg_proc
             WHERE pronamespace = 'public'::regnamespace AND prosrc ~* '(pg_notify|\\mnotify\\M)'",
        &[],
    )
    .await;
    assert!(notifying.is_empty(), "functions that notify: {notifying:?}");
    fleet.stop().await;
}
