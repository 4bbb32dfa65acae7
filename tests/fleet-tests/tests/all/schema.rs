//! The database itself enforces the snapshot's immutability and the append-only history,
//! whatever code (or person with psql) tries otherwise.

use fleet_tests::{intent, op_of, TestFleet};

async fn prepared_fleet() -> (TestFleet, String) {
    let fleet = TestFleet::with_prepare().await;
    let i = intent();
    fleet.submitted(&i).await;
    (fleet, op_of(&i))
}

#[tokio::test]
async fn updating_payload_or_payload_hash_through_sql_is_rejected_by_the_database() {
    let (fleet, op) = prepared_fleet().await;
    let before = fleet.row(&op).await;
    let sql = fleet.sql().await;
    let attempts = [
        "UPDATE operations SET payload = jsonb_set(payload, '{amount_minor}', '99999999') WHERE operation_id = $1",
        "UPDATE operations SET payload_hash = 'sha256:0000000000000000000000000000000000000000000000000000000000000000' WHERE operation_id = $1",
        "UPDATE operations SET policy_version = 'payments-v0' WHERE operation_id = $1",
        "UPDATE operations SET tenant_id = 'org_other' WHERE operation_id = $1",
        "UPDATE operations SET idempotency_key = 'another' WHERE operation_id = $1",
    ];
    for statement in attempts {
        let err = sql.execute(statement, &[&op]).await.expect_err(statement);
        assert!(
            err.to_string().contains("immutable") || format!("{err:?}").contains("immutable"),
            "{statement}: {err:?}"
        );
    }
    let after = fleet.row(&op).await;
    assert_eq!(after.payload, before.payload);
    assert_eq!(after.payload_hash, before.payload_hash);
    // Columns outside the snapshot stay writable (that is how work progresses).
    sql.execute(
        "UPDATE operations SET rationale = 'edited' WHERE operation_id = $1",
        &[&op],
    )
    .await
    .unwrap();
    fleet.stop().await;
}

#[tokio::test]
async fn operation_events_cannot_be_updated_deleted_or_truncated() {
    let (fleet, op) = prepared_fleet().await;
    let sql = fleet.sql().await;
    assert!(sql
        .execute(
            "UPDATE operation_events SET actor = 'someone else' WHERE operation_id = $1",
            &[&op]
        )
        .await
        .is_err());
    assert!(sql
        .execute(
            "DELETE FROM operation_events WHERE operation_id = $1",
            &[&op]
        )
        .await
        .is_err());
    assert!(sql
        .batch_execute("TRUNCATE operation_events")
        .await
        .is_err());
    assert_eq!(fleet.history_len(&op).await, 1);
    fleet.stop().await;
}

#[tokio::test]
async fn status_and_approval_columns_only_hold_known_values() {
    let (fleet, op) = prepared_fleet().await;
    let sql = fleet.sql().await;
    assert!(sql
        .execute(
            "UPDATE operations SET status = 'escalated' WHERE operation_id = $1",
            &[&op]
        )
        .await
        .is_err());
    assert!(sql
        .execute(
            "UPDATE operations SET approval_status = 'maybe' WHERE operation_id = $1",
            &[&op]
        )
        .await
        .is_err());
    // approved without an approved hash is refused too
    assert!(sql
        .execute(
            "UPDATE operations SET approval_status = 'approved' WHERE operation_id = $1",
            &[&op]
        )
        .await
        .is_err());
    fleet.stop().await;
}

#[tokio::test]
async fn the_provider_column_holds_only_providers_the_fleet_has_adapters_for() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    let insert = |n: u32, provider: &str| {
        format!(
            "INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash,
                                     policy_version, data_version, idempotency_key, approval_expires_at)
             VALUES ('op_3{n:025}', 'org_482', 'payment.create', '{provider}', '{{}}',
                     'sha256:' || repeat('0', 64), 'payments-v3', 'd', 'op_3{n:025}', now())"
        )
    };
    for (n, provider) in fleet_core::ProviderName::all().enumerate() {
        sql.batch_execute(&insert(n as u32, provider.as_str()))
            .await
            .unwrap_or_else(|e| panic!("{provider}: {e}"));
    }
    let err = sql
        .batch_execute(&insert(99, "mystery"))
        .await
        .expect_err("an unknown provider is refused");
    // The column references the `providers` table `fleetctl migrate` fills from the
    // catalogue's provider specs.
    assert_eq!(
        err.code(),
        Some(&tokio_postgres::error::SqlState::FOREIGN_KEY_VIOLATION),
        "{err}"
    );
    fleet.stop().await;
}

/// The snapshot's rules (id, action, hash, quorum) are checked when the row is inserted,
/// each refusal naming its rule as a CHECK constraint would, and the provider is a
/// reference; no CHECK constraint of `operations` reads those columns, so the
/// compare-and-set updates, which may not change them, do not evaluate them again.
#[tokio::test]
async fn the_snapshot_rules_refuse_a_bad_row_at_insert_and_no_update_evaluates_them_again() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    let good = [
        ("operation_id", "'op_4' || lpad('{n}', 25, '0')"),
        ("action", "'payment.create'"),
        ("provider", "'payments'"),
        ("payload_hash", "'sha256:' || repeat('0', 64)"),
        ("approvals_required", "1"),
    ];
    let insert = |n: i64, column: &str, value: &str| {
        let [id, action, provider, hash, quorum] =
            good.map(|(c, v)| if c == column { value } else { v }.replace("{n}", &n.to_string()));
        format!(
            "INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash,
                                     approvals_required, policy_version, data_version,
                                     idempotency_key, approval_expires_at)
             VALUES ({id}, 'org_482', {action}, {provider}, '{{}}', {hash}, {quorum},
                     'payments-v3', 'd', 'key-{n}', now())"
        )
    };
    sql.execute(&insert(1, "", ""), &[])
        .await
        .expect("a valid row");
    let bad = [
        (
            "operation_id",
            "'op_lowercase'",
            "operations_operation_id_check",
        ),
        ("action", "'payment.delete'", "operations_action_check"),
        (
            "payload_hash",
            "'sha256:ABC'",
            "operations_payload_hash_check",
        ),
        (
            "approvals_required",
            "11",
            "operations_approvals_required_check",
        ),
        (
            "approvals_required",
            "0",
            "operations_approvals_required_check",
        ),
    ];
    for (i, (column, value, constraint)) in bad.into_iter().enumerate() {
        let err = sql
            .execute(&insert(10 + i as i64, column, value), &[])
            .await
            .expect_err(constraint);
        let db = err.as_db_error().unwrap_or_else(|| panic!("{err:?}"));
        assert_eq!(
            db.code(),
            &tokio_postgres::error::SqlState::CHECK_VIOLATION,
            "{column}: {db:?}"
        );
        assert_eq!(db.constraint(), Some(constraint), "{column}: {db:?}");
        assert_eq!(db.table(), Some("operations"), "{column}: {db:?}");
    }
    // The provider is not a rule of the trigger: it references the `providers` table, and an
    // unknown one is refused as a reference is.
    let err = sql
        .execute(&insert(20, "provider", "'mystery'"), &[])
        .await
        .expect_err("an unknown provider");
    let db = err.as_db_error().unwrap_or_else(|| panic!("{err:?}"));
    assert_eq!(
        db.code(),
        &tokio_postgres::error::SqlState::FOREIGN_KEY_VIOLATION,
        "{db:?}"
    );
    assert_eq!(db.constraint(), Some("operations_provider_fkey"), "{db:?}");
    assert_eq!(db.table(), Some("operations"), "{db:?}");
    let count: i64 = sql
        .query_one("SELECT count(*) FROM operations", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 1, "only the valid row was written");
    let rereads: Vec<String> = fleet_tests::first_column(
        &sql,
        "SELECT c.conname FROM pg_constraint c
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
             WHERE c.conrelid = 'operations'::regclass AND c.contype = 'c'
               AND a.attname IN ('operation_id', 'action', 'provider', 'payload_hash', 'approvals_required')",
        &[],
    )
    .await;
    assert!(
        rereads.is_empty(),
        "CHECK constraints on snapshot columns: {rereads:?}"
    );
    fleet.stop().await;
}
