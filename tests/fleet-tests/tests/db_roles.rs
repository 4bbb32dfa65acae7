//! Least privilege in Postgres: each component connects with its own login role, and the
//! database itself refuses what the component has no business doing. Above all, no worker
//! can approve anything: only the API's role writes approvals and decisions.

use fleet_core::ApprovalStatus;
use fleet_store::{role_url, DbRole};
use fleet_tests::{hash_of, intent, op_of, TestFleet};

const WORKERS: [DbRole; 5] = [
    DbRole::Prepare,
    DbRole::Execute,
    DbRole::Reconcile,
    DbRole::WebhookIngest,
    DbRole::Relay,
];

async fn connect_as(fleet: &TestFleet, role: DbRole) -> tokio_postgres::Client {
    let url = role_url(
        &fleet.database_url,
        role,
        role.password_from_env().as_deref(),
    )
    .unwrap();
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("{} logs in: {e}", role.name()));
    tokio::spawn(connection);
    client
}

/// The SQLSTATE of a refused statement, or "ok" when it ran.
async fn attempt(
    client: &tokio_postgres::Client,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> String {
    match client.execute(sql, params).await {
        Ok(_) => "ok".to_owned(),
        Err(e) => e
            .code()
            .map_or_else(|| e.to_string(), |c| c.code().to_owned()),
    }
}

const PERMISSION_DENIED: &str = "42501";

/// Approving directly: the approval columns, and a row of the approvals table.
const APPROVE: &str = "UPDATE operations SET approval_status = 'approved', approved_hash = $2, decided_by = 'mallory', decided_at = now() WHERE operation_id = $1";
const RECORD_APPROVAL: &str = "INSERT INTO approvals (operation_id, principal, signed_in_with, payload_hash) VALUES ($1, 'mallory', 'token', $2)";

#[tokio::test]
async fn the_execute_role_gets_permission_denied_approving_an_operation() {
    let mut fleet = TestFleet::start().await;
    fleet.spawn_prepare();
    let intent = intent();
    let (op, hash) = (op_of(&intent), hash_of(&intent));
    fleet.submit(&intent).await;
    fleet.prepared(&op).await;

    let execute = connect_as(&fleet, DbRole::Execute).await;
    assert_eq!(
        attempt(&execute, APPROVE, &[&op, &hash]).await,
        PERMISSION_DENIED
    );
    assert_eq!(
        attempt(
            &execute,
            "UPDATE operations SET approval_status = 'approved' WHERE operation_id = $1",
            &[&op]
        )
        .await,
        PERMISSION_DENIED
    );
    assert_eq!(
        attempt(&execute, RECORD_APPROVAL, &[&op, &hash]).await,
        PERMISSION_DENIED
    );
    // What execute does do still works: it may move the execution columns.
    assert_eq!(
        attempt(
            &execute,
            "UPDATE operations SET updated_at = now() WHERE operation_id = $1",
            &[&op]
        )
        .await,
        "ok"
    );

    let row = fleet.store.get(&op).await.unwrap().unwrap();
    assert_eq!(
        (row.approval_status, row.decided_by),
        (ApprovalStatus::Pending, None)
    );
    fleet.stop().await;
}

#[tokio::test]
async fn only_the_api_role_records_approvals_and_decisions() {
    let mut fleet = TestFleet::start().await;
    fleet.spawn_prepare();
    let intent = intent();
    let (op, hash) = (op_of(&intent), hash_of(&intent));
    fleet.submit(&intent).await;
    fleet.prepared(&op).await;

    for role in WORKERS {
        let client = connect_as(&fleet, role).await;
        for (what, sql) in [
            ("approving", APPROVE),
            ("recording an approval", RECORD_APPROVAL),
        ] {
            assert_eq!(
                attempt(&client, sql, &[&op, &hash]).await,
                PERMISSION_DENIED,
                "{} {what}",
                role.name()
            );
        }
        // Nor can a worker forge an outcome event on the outbox, or mint itself a token.
        let forged = "INSERT INTO operation_outbox (operation_id, sequence, event_type, tenant_id, history_id, occurred_at, data) VALUES ($1, 99, 'x', 't', 1, now(), '{}')";
        assert_eq!(
            attempt(&client, forged, &[&op]).await,
            PERMISSION_DENIED,
            "{} writing the outbox",
            role.name()
        );
        assert_eq!(
            attempt(&client, "SELECT token_hash FROM api_tokens", &[]).await,
            PERMISSION_DENIED,
            "{} reading tokens",
            role.name()
        );
    }

    // The API's role may (rolled back: the test only asks the database).
    let mut api = connect_as(&fleet, DbRole::Api).await;
    let tx = api.transaction().await.unwrap();
    assert_eq!(tx.execute(RECORD_APPROVAL, &[&op, &hash]).await.unwrap(), 1);
    assert_eq!(tx.execute(APPROVE, &[&op, &hash]).await.unwrap(), 1);
    tx.rollback().await.unwrap();
    fleet.stop().await;
}

#[tokio::test]
async fn no_component_role_is_a_superuser_an_owner_or_a_member_of_another_role() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    for role in DbRole::ALL {
        let name = role.name();
        let row = sql
            .query_one(
                "SELECT r.rolsuper, r.rolcreatedb, r.rolcreaterole, r.rolbypassrls, r.rolcanlogin,
                        (SELECT count(*) FROM pg_class c WHERE c.relowner = r.oid) AS owns,
                        (SELECT count(*) FROM pg_auth_members m WHERE m.member = r.oid) AS member_of
                 FROM pg_roles r WHERE r.rolname = $1",
                &[&name],
            )
            .await
            .unwrap_or_else(|e| panic!("{name} exists: {e}"));
        let flags: (bool, bool, bool, bool, bool, i64, i64) = (
            row.get(0),
            row.get(1),
            row.get(2),
            row.get(3),
            row.get(4),
            row.get(5),
            row.get(6),
        );
        assert_eq!(
            flags,
            (false, false, false, false, true, 0, 0),
            "{name}: superuser, createdb, createrole, bypassrls, login, owns, member of"
        );
    }
    fleet.stop().await;
}

#[tokio::test]
async fn every_table_is_granted_to_some_component() {
    // A migration that adds a table must say which components use it: a table no role may
    // touch is one no worker can read once it runs with its own role.
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    let roles: Vec<&str> = DbRole::ALL.iter().map(|r| r.name()).collect();
    let ungranted: Vec<String> = sql
        .query(
            "SELECT t.tablename FROM pg_tables t
             WHERE t.schemaname = 'public' AND t.tablename <> '_sqlx_migrations'
               AND NOT EXISTS (SELECT FROM information_schema.role_table_grants g
                               WHERE g.table_name = t.tablename AND g.grantee = ANY($1))
               AND NOT EXISTS (SELECT FROM information_schema.role_column_grants g
                               WHERE g.table_name = t.tablename AND g.grantee = ANY($1))",
            &[&roles],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(
        ungranted.is_empty(),
        "tables no component role is granted: {ungranted:?}"
    );
    fleet.stop().await;
}
