//! Least privilege in Postgres, held by the database whoever connects: each component
//! connects with its own deployment's login role; each role writes exactly the columns its
//! code writes; no role can make an operation approved without the recorded approvals of
//! its quorum, nor write history in another's name; and one deployment's roles cannot
//! reach another deployment's database on the same server.

use fleet_tests::at;
use std::collections::BTreeSet;

use fleet_core::{ApprovalStatus, Status};
use fleet_store::component::{Capability, Privilege};
use fleet_store::{DbRole, RolePrefix};
use fleet_tests::{hash_of, intent, op_of, with_amount, TestFleet};
use serde_json::json;

const WORKERS: [DbRole; 5] = [
    DbRole::Prepare,
    DbRole::Execute,
    DbRole::Reconcile,
    DbRole::WebhookIngest,
    DbRole::Relay,
];

async fn connect_url(url: &str) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
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

/// As [`attempt`], inside a transaction that is rolled back: the test only asks the
/// database what it would allow.
async fn attempt_rolled_back(
    client: &mut tokio_postgres::Client,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> String {
    let tx = client.transaction().await.unwrap();
    let answer = match tx.execute(sql, params).await {
        Ok(_) => "ok".to_owned(),
        Err(e) => e
            .code()
            .map_or_else(|| e.to_string(), |c| c.code().to_owned()),
    };
    tx.rollback().await.unwrap();
    answer
}

const PERMISSION_DENIED: &str = "42501";
const CHECK_VIOLATION: &str = "23514";

/// Approving directly: the approval columns, and a row of the approvals table.
const APPROVE: &str = "UPDATE operations SET approval_status = 'approved', approved_hash = $2, decided_by = 'mallory', decided_at = now() WHERE operation_id = $1";
const RECORD_APPROVAL: &str = "INSERT INTO approvals (operation_id, principal, signed_in_with, payload_hash) VALUES ($1, 'mallory', 'token', $2)";

/// A fleet with prepare running and `intent` prepared: (fleet, operation id, hash).
async fn with_prepared(intent: &serde_json::Value) -> (TestFleet, String, String) {
    let fleet = TestFleet::with_prepare().await;
    let (op, hash) = (op_of(intent), hash_of(intent));
    fleet.submit(intent).await;
    fleet.prepared(&op).await;
    (fleet, op, hash)
}

/// Waits until execute (a real process, as its own role) has paid a genuine operation
/// approved after the attack; then the attacked operation, whose bell rang first, can be
/// checked: nothing was sent for it.
async fn assert_never_paid(fleet: &TestFleet, attacked: &str) {
    let genuine = fleet.submit_and_approve(&intent()).await;
    fleet.reaches(&genuine, Status::Succeeded).await;
    assert_eq!(fleet.sim_effects(attacked).await, 0, "{attacked} was paid");
    assert_eq!(
        fleet
            .count(&format!(
                "SELECT count(*) FROM attempts WHERE operation_id = '{attacked}'"
            ))
            .await,
        0,
        "{attacked} was claimed"
    );
}

#[tokio::test]
async fn the_execute_role_gets_permission_denied_approving_an_operation() {
    let (fleet, op, hash) = with_prepared(&intent()).await;
    let execute = fleet.connect_as(DbRole::Execute).await;
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
    let row = fleet.row(&op).await;
    assert_eq!(
        (row.approval_status, row.decided_by),
        (ApprovalStatus::Pending, None)
    );
    fleet.stop().await;
}

#[tokio::test]
async fn no_worker_role_records_approvals_and_the_api_role_only_through_the_quorum() {
    let (fleet, op, hash) = with_prepared(&intent()).await;
    for role in WORKERS {
        let client = fleet.connect_as(role).await;
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
        // Nor can a worker forge an outcome event on the outbox, or read the tokens.
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

    let mut api = fleet.connect_as(DbRole::Api).await;
    // Not without an approval, nor with an approval by nobody the fleet knows.
    assert_eq!(
        attempt_rolled_back(&mut api, APPROVE, &[&op, &hash]).await,
        CHECK_VIOLATION
    );
    assert_eq!(
        attempt_rolled_back(&mut api, RECORD_APPROVAL, &[&op, &hash]).await,
        CHECK_VIOLATION
    );
    // Nor an approval of another hash.
    let other = format!("sha256:{}", "0".repeat(64));
    assert_eq!(
        attempt_rolled_back(
            &mut api,
            "INSERT INTO approvals (operation_id, principal, signed_in_with, payload_hash) VALUES ($1, 'ann', 'token', $2)",
            &[&op, &other]
        )
        .await,
        CHECK_VIOLATION
    );
    // An existing approver's approval of the stored hash completes this quorum of one.
    let tx = api.transaction().await.unwrap();
    tx.execute(
        "INSERT INTO approvals (operation_id, principal, signed_in_with, payload_hash) VALUES ($1, 'ann', 'token', $2)",
        &[&op, &hash],
    )
    .await
    .unwrap();
    assert_eq!(
        tx.execute(
            "UPDATE operations SET approval_status = 'approved', approved_hash = $2, decided_by = 'ann', decided_at = now() WHERE operation_id = $1",
            &[&op, &hash]
        )
        .await
        .unwrap(),
        1
    );
    tx.rollback().await.unwrap();
    fleet.stop().await;
}

#[tokio::test]
async fn an_operation_inserted_already_approved_is_refused_and_never_paid() {
    let fleet = TestFleet::with_prepare().await;
    let _execute = fleet.spawn_process("fleet-execute", &[]);
    let prepare = fleet.connect_as(DbRole::Prepare).await;
    let forged = intent();
    let (op, hash) = (op_of(&forged), hash_of(&forged));
    let insert = "INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash,
                      policy_version, data_version, idempotency_key, approval_expires_at, approvals_required,
                      approval_status, approved_hash, decided_by, decided_at)
                  VALUES ($1, 'org_482', 'payment.create', 'payments', $3, $2, 'payments-v3', 'inv_9182@7', $1,
                          now() + interval '1 hour', 2, 'approved', $2, 'alice', now())";
    // The approval columns are not the intake's to write at all…
    assert_eq!(
        attempt(&prepare, insert, &[&op, &hash, &forged["payload"]]).await,
        PERMISSION_DENIED
    );
    // …and whoever may write them (here the owner) cannot insert a decided operation.
    assert_eq!(
        attempt(
            &fleet.sql().await,
            insert,
            &[&op, &hash, &forged["payload"]]
        )
        .await,
        CHECK_VIOLATION
    );
    // Nor one already running, or with a fence.
    let running = "INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash,
                       policy_version, data_version, idempotency_key, approval_expires_at, status, fence)
                   VALUES ($1, 'org_482', 'payment.create', 'payments', $3, $2, 'payments-v3', 'inv_9182@7', $1,
                           now() + interval '1 hour', 'in_progress', 1)";
    assert_eq!(
        attempt(
            &fleet.sql().await,
            running,
            &[&op, &hash, &forged["payload"]]
        )
        .await,
        CHECK_VIOLATION
    );
    fleet.ring_execute(&op).await;
    assert_never_paid(&fleet, &op).await;
    assert!(fleet.store.get(at(&op)).await.unwrap().is_none());
    fleet.stop().await;
}

#[tokio::test]
async fn the_api_role_cannot_approve_a_large_payment_short_of_its_quorum() {
    // 1,500,000.00 KZT: two distinct approvers.
    let large = with_amount(intent(), json!(150_000_000));
    let (fleet, op, hash) = with_prepared(&large).await;
    assert_eq!(
        fleet
            .count(&format!(
                "SELECT approvals_required::int8 FROM operations WHERE operation_id = '{op}'"
            ))
            .await,
        2
    );
    let _execute = fleet.spawn_process("fleet-execute", &[]);
    let api = fleet.connect_as(DbRole::Api).await;
    let approve =
        "UPDATE operations SET approval_status = 'approved', approved_hash = payload_hash,
                       decided_by = 'ann', decided_at = now() WHERE operation_id = $1";
    assert_eq!(attempt(&api, approve, &[&op]).await, CHECK_VIOLATION);
    // One of two approvals recorded: still short.
    let anns = "INSERT INTO approvals (operation_id, principal, signed_in_with, payload_hash) VALUES ($1, 'ann', 'token', $2)";
    assert_eq!(attempt(&api, anns, &[&op, &hash]).await, "ok");
    assert_eq!(attempt(&api, approve, &[&op]).await, CHECK_VIOLATION);
    // The same approver again is still one approver.
    assert_eq!(attempt(&api, anns, &[&op, &hash]).await, "23505");
    fleet.ring_execute(&op).await;
    assert_never_paid(&fleet, &op).await;
    let row = fleet.row(&op).await;
    assert_eq!(
        (row.approval_status, row.status),
        (ApprovalStatus::Pending, Status::NotStarted)
    );
    fleet.stop().await;
}

#[tokio::test]
async fn a_row_that_reads_approved_without_its_approvals_is_never_claimed() {
    let (fleet, op, _) = with_prepared(&intent()).await;
    let _execute = fleet.spawn_process("fleet-execute", &[]);
    // Only the owner can get past the database's own check (by switching triggers off):
    // execute's claim counts the approvals again.
    let owner = fleet.sql().await;
    owner
        .batch_execute(&format!(
            "BEGIN;
             SET LOCAL session_replication_role = replica;
             UPDATE operations SET approval_status = 'approved', approved_hash = payload_hash,
                 decided_by = 'ann', decided_at = now() WHERE operation_id = '{op}';
             COMMIT;"
        ))
        .await
        .unwrap();
    fleet.ring_execute(&op).await;
    assert_never_paid(&fleet, &op).await;
    assert_eq!(fleet.row(&op).await.status, Status::NotStarted);
    fleet.stop().await;
}

/// What each component's role may write: per table, the columns it may insert and
/// update, and whether it may delete rows. Anything not listed is refused.
fn writes(role: DbRole) -> BTreeSet<(String, String, &'static str)> {
    const INTAKE: &[&str] = &[
        "operation_id",
        "tenant_id",
        "action",
        "provider",
        "target",
        "supersedes",
        "rationale",
        "payload",
        "payload_hash",
        "policy_version",
        "data_version",
        "idempotency_key",
        "approval_expires_at",
        "submitted_by",
        "approvals_required",
        "signatures_required",
        "payee",
        "risk",
        "trace_parent",
    ];
    const MOVE: &[&str] = &[
        "status",
        "status_reason",
        "external_id",
        "provider_request_id",
        "result",
        "error_code",
        "deadline_at",
        "unknown_since",
        "escalated_at",
        "resolved_at",
        "lease_owner",
        "lease_expires_at",
        "updated_at",
    ];
    const HISTORY: &[&str] = &[
        "operation_id",
        "tenant_id",
        "kind",
        "from_status",
        "to_status",
        "fence",
        "actor",
        "reason",
        "evidence",
        "signed_in_with",
    ];
    const ATTEMPT_DONE: &[&str] = &[
        "finished_at",
        "outcome",
        "http_status",
        "replayed",
        "external_id",
        "provider_request_id",
        "response",
        "detail",
    ];
    const WEBHOOK_APPLIED: &[&str] = &["operation_id", "tenant_id", "outcome", "applied_at"];
    let mut w: Vec<(&str, &[&str], &'static str)> = Vec::new();
    let mover = !matches!(role, DbRole::Relay);
    if matches!(role, DbRole::Api | DbRole::Prepare) {
        w.push(("operations", INTAKE, "INSERT"));
    }
    if mover {
        w.push(("operations", MOVE, "UPDATE"));
        w.push(("operation_events", HISTORY, "INSERT"));
    }
    match role {
        DbRole::Api => {
            w.push((
                "operations",
                &[
                    "approval_status",
                    "approved_hash",
                    "decided_by",
                    "decided_at",
                ],
                "UPDATE",
            ));
            w.push((
                "approvals",
                &[
                    "operation_id",
                    "tenant_id",
                    "principal",
                    "signed_in_with",
                    "payload_hash",
                    "key_id",
                    "signature",
                    "signed_expires_at",
                ],
                "INSERT",
            ));
            w.push((
                "console_sessions",
                &[
                    "session_hash",
                    "principal",
                    "signed_in_with",
                    "expires_at",
                    "role",
                    "tenants",
                ],
                "INSERT",
            ));
            w.push(("console_sessions", &[], "DELETE"));
            // When a token was last used (at most once a minute).
            w.push(("api_tokens", &["last_used_at"], "UPDATE"));
            // Passkey registrations started and finished in the console; an
            // administrator (the owner) turns one into a key.
            w.push((
                "passkey_requests",
                &["request_id", "principal", "ceremony"],
                "INSERT",
            ));
            w.push((
                "passkey_requests",
                &[
                    "ceremony",
                    "finished_at",
                    "key_id",
                    "public_key",
                    "credential_id",
                    "rp_id",
                    "origin",
                ],
                "UPDATE",
            ));
            w.push(("passkey_requests", &[], "DELETE"));
        }
        DbRole::Prepare => {}
        DbRole::Execute => {
            w.push(("operations", &["fence", "attempts"], "UPDATE"));
            w.push((
                "attempts",
                &[
                    "operation_id",
                    "tenant_id",
                    "fence",
                    "worker",
                    "request_sent",
                ],
                "INSERT",
            ));
            w.push(("attempts", ATTEMPT_DONE, "UPDATE"));
            // The send mark, written right before a request goes out.
            w.push(("attempts", &["request_sent"], "UPDATE"));
        }
        DbRole::Reconcile => {
            w.push((
                "operations",
                &["lookup_failures", "next_lookup_at", "audited_at"],
                "UPDATE",
            ));
            w.push(("attempts", ATTEMPT_DONE, "UPDATE"));
            w.push(("webhook_events", WEBHOOK_APPLIED, "UPDATE"));
        }
        DbRole::WebhookIngest => {
            w.push((
                "webhook_events",
                &[
                    "provider",
                    "event_id",
                    "event_type",
                    "received_at",
                    "payload_hash",
                    "reference",
                    "object_id",
                    "object",
                ],
                "INSERT",
            ));
            w.push(("webhook_events", WEBHOOK_APPLIED, "UPDATE"));
            w.push(("webhook_events", &[], "DELETE"));
        }
        DbRole::Relay => {
            w.push(("operation_outbox", &["published_at"], "UPDATE"));
            w.push(("operation_outbox", &[], "DELETE"));
        }
    }
    let mut set = BTreeSet::new();
    for (table, columns, privilege) in w {
        if columns.is_empty() {
            set.insert((table.to_owned(), String::new(), privilege));
        }
        for c in columns {
            set.insert((table.to_owned(), (*c).to_owned(), privilege));
        }
    }
    set
}

#[tokio::test]
async fn every_role_writes_exactly_the_columns_its_code_writes() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    let prefix = RolePrefix::of(&fleet.database_url).unwrap();
    let mut wrong = Vec::new();
    for role in DbRole::ALL {
        // Asked of the login role: what the component can do, its group's grants included.
        let login = role.login_name(&prefix);
        let rows = sql
            .query(
                "SELECT c.table_name::text, c.column_name::text, p.privilege
                 FROM information_schema.columns c
                 CROSS JOIN (VALUES ('INSERT'), ('UPDATE')) AS p(privilege)
                 WHERE c.table_schema = 'public' AND c.table_name <> '_sqlx_migrations'
                   AND has_column_privilege($1, format('public.%I', c.table_name), c.column_name, p.privilege)
                 UNION ALL
                 SELECT t.tablename::text, '', p.privilege
                 FROM pg_tables t CROSS JOIN (VALUES ('DELETE'), ('TRUNCATE')) AS p(privilege)
                 WHERE t.schemaname = 'public' AND t.tablename <> '_sqlx_migrations'
                   AND has_table_privilege($1, format('public.%I', t.tablename), p.privilege)",
                &[&login],
            )
            .await
            .unwrap();
        let granted: BTreeSet<(String, String, String)> = rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        let expected: BTreeSet<(String, String, String)> = writes(role)
            .into_iter()
            .map(|(t, c, p)| (t, c, p.to_owned()))
            .collect();
        for extra in granted.difference(&expected) {
            wrong.push(format!("{login} may but should not: {extra:?}"));
        }
        for missing in expected.difference(&granted) {
            wrong.push(format!("{login} should but may not: {missing:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    fleet.stop().await;
}

const KINDS: [&str; 9] = [
    "prepared",
    "approved",
    "approval_recorded",
    "approval_expired",
    "transition",
    "escalated",
    "lookup",
    "audited",
    "webhook_conflict",
];
const ACTORS: [&str; 9] = [
    "prepare",
    "execute",
    "reconcile",
    "webhook-ingest",
    "relay",
    "approver",
    "approver:cfo",
    "operator:cfo",
    "mallory",
];

/// The history rows (kind, actor) a role may write, when the actor names no person.
fn may_write(role: DbRole, kind: &str, actor: &str) -> bool {
    let webhook = actor == "webhook-ingest"
        && matches!(kind, "transition" | "webhook_conflict" | "escalated");
    match role {
        DbRole::Prepare => actor == "prepare" && matches!(kind, "prepared" | "transition"),
        DbRole::Api => {
            (actor == "prepare" && matches!(kind, "prepared" | "transition"))
                || (actor == "approver" && kind == "approval_expired")
        }
        DbRole::Execute => actor == "execute" && matches!(kind, "transition" | "escalated"),
        DbRole::Reconcile => {
            (actor == "reconcile"
                && matches!(
                    kind,
                    "transition" | "escalated" | "lookup" | "audited" | "approval_expired"
                ))
                || webhook
        }
        DbRole::WebhookIngest => webhook,
        DbRole::Relay => false,
    }
}

#[tokio::test]
async fn no_role_writes_history_in_another_components_or_a_persons_name() {
    let (fleet, op, _) = with_prepared(&intent()).await;
    let insert = "INSERT INTO operation_events (operation_id, kind, fence, actor, reason) VALUES ($1, $2, 0, $3, $4)";
    let mut wrong = Vec::new();
    for role in DbRole::ALL {
        let mut client = fleet.connect_as(role).await;
        for kind in KINDS {
            for actor in ACTORS {
                let answer =
                    attempt_rolled_back(&mut client, insert, &[&op, &kind, &actor, &None::<&str>])
                        .await;
                let expected = if may_write(role, kind, actor) {
                    "ok"
                } else {
                    PERMISSION_DENIED
                };
                if answer != expected {
                    wrong.push(format!("{} {kind} by {actor}: {answer}", role.name()));
                }
            }
        }
        // How a person signed in is the API's to say, and only of a person's row.
        let signed = "INSERT INTO operation_events (operation_id, kind, fence, actor, signed_in_with) VALUES ($1, 'transition', 0, $2, 'token')";
        let own = match role {
            DbRole::Api | DbRole::Prepare | DbRole::Relay => "prepare",
            DbRole::Execute => "execute",
            DbRole::Reconcile => "reconcile",
            DbRole::WebhookIngest => "webhook-ingest",
        };
        let answer = attempt_rolled_back(&mut client, signed, &[&op, &own]).await;
        if answer != PERMISSION_DENIED {
            wrong.push(format!("{} signed_in_with by {own}: {answer}", role.name()));
        }
    }
    // The API's person rows: an approval event needs that person's recorded approval, a
    // rejection or an operator's decision an existing principal.
    let mut api = fleet.connect_as(DbRole::Api).await;
    for (kind, actor, reason, expected) in [
        ("approved", "approver:ann", None, PERMISSION_DENIED),
        ("approval_recorded", "approver:ann", None, PERMISSION_DENIED),
        (
            "transition",
            "approver:ann",
            Some("approval_rejected"),
            "ok",
        ),
        (
            "transition",
            "approver:cfo",
            Some("approval_rejected"),
            PERMISSION_DENIED,
        ),
        ("transition", "approver:ann", None, PERMISSION_DENIED),
        ("transition", "operator:ann", None, "ok"),
        ("escalated", "operator:ann", None, "ok"),
        ("lookup", "operator:ann", None, PERMISSION_DENIED),
    ] {
        let answer = attempt_rolled_back(&mut api, insert, &[&op, &kind, &actor, &reason]).await;
        if answer != expected {
            wrong.push(format!(
                "fleet_api {kind} by {actor} ({reason:?}): {answer}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // Nothing forged reached the outbox.
    assert_eq!(
        fleet
            .count(&format!(
                "SELECT count(*) FROM operation_outbox WHERE operation_id = '{op}' AND event_type <> 'prepared'"
            ))
            .await,
        0
    );
    fleet.stop().await;
}

/// The rule is checked for each statement: one history row not the writer's to write
/// refuses the whole statement, whichever row it is, and names it.
#[tokio::test]
async fn a_statement_of_several_history_rows_is_refused_whole_for_one_not_the_writers() {
    let (fleet, op, _) = with_prepared(&intent()).await;
    let history = format!("SELECT count(*) FROM operation_events WHERE operation_id = '{op}'");
    let events = format!("SELECT count(*) FROM operation_outbox WHERE operation_id = '{op}'");
    let (rows_before, events_before) = (fleet.count(&history).await, fleet.count(&events).await);
    let execute = fleet.connect_as(DbRole::Execute).await;
    let insert = "INSERT INTO operation_events (operation_id, kind, fence, actor) \
                  SELECT $1, k, 0, a FROM unnest($2::text[], $3::text[]) AS r(k, a)";
    for (kinds, actors) in [
        (["escalated", "transition"], ["execute", "reconcile"]),
        (["transition", "escalated"], ["reconcile", "execute"]),
    ] {
        let refused = execute
            .execute(insert, &[&op, &kinds.to_vec(), &actors.to_vec()])
            .await
            .expect_err("a statement with a row in reconcile's name must be refused");
        let db = refused.as_db_error().expect("a database error");
        assert_eq!(db.code().code(), PERMISSION_DENIED, "{db}");
        assert_eq!(db.table(), Some("operation_events"));
        assert_eq!(
            db.message(),
            "the fleet_execute role may not write a history row of kind transition by reconcile"
        );
    }
    assert_eq!(
        fleet.count(&history).await,
        rows_before,
        "nothing of a refused statement stays"
    );
    assert_eq!(
        fleet.count(&events).await,
        events_before,
        "and no event was written for it"
    );
    // The same statement with every row the writer's own is stored whole.
    let stored = execute
        .execute(
            insert,
            &[
                &op,
                &vec!["escalated", "escalated"],
                &vec!["execute", "execute"],
            ],
        )
        .await
        .expect("execute's own rows");
    assert_eq!(stored, 2);
    assert_eq!(fleet.count(&history).await, rows_before + 2);
    fleet.stop().await;
}

#[tokio::test]
async fn each_deployment_has_its_own_login_roles_and_the_groups_log_in_nowhere() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    let prefix = RolePrefix::of(&fleet.database_url).unwrap();
    for role in DbRole::ALL {
        let login = role.login_name(&prefix);
        assert!(login.starts_with(fleet.name()), "{login}");
        let row = sql
            .query_one(
                "SELECT r.rolsuper, r.rolcreatedb, r.rolcreaterole, r.rolbypassrls, r.rolcanlogin,
                        (SELECT count(*) FROM pg_class c WHERE c.relowner = r.oid) AS owns,
                        ARRAY(SELECT g.rolname::text FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid
                              WHERE m.member = r.oid) AS member_of,
                        (SELECT g.rolcanlogin FROM pg_roles g WHERE g.rolname = $2) AS group_logs_in
                 FROM pg_roles r WHERE r.rolname = $1",
                &[&login, &role.name()],
            )
            .await
            .unwrap_or_else(|e| panic!("{login} exists: {e}"));
        let flags: (bool, bool, bool, bool, bool, i64, Vec<String>, bool) = (
            row.get(0),
            row.get(1),
            row.get(2),
            row.get(3),
            row.get(4),
            row.get(5),
            row.get(6),
            row.get(7),
        );
        assert_eq!(
            flags,
            (
                false,
                false,
                false,
                false,
                true,
                0,
                vec![role.name().to_owned()],
                false
            ),
            "{login}: superuser, createdb, createrole, bypassrls, login, owns, member of, its group logs in"
        );
    }
    fleet.stop().await;
}

#[tokio::test]
async fn one_deployments_roles_cannot_reach_another_deployments_database() {
    let (a, b) = (TestFleet::start().await, TestFleet::start().await);
    let prefix_a = RolePrefix::of(&a.database_url).unwrap();
    for role in DbRole::ALL {
        // A's role, B's database.
        let mut url = url::Url::parse(&b.database_url).unwrap();
        url.set_username(&role.login_name(&prefix_a)).unwrap();
        let refused = connect_url(url.as_str())
            .await
            .err()
            .unwrap_or_else(|| panic!("{} connected to {}", role.login_name(&prefix_a), b.name()));
        assert_eq!(
            refused.code().map(|c| c.code()),
            Some(PERMISSION_DENIED),
            "{refused}"
        );
        // Its own still works, and the shared group logs in nowhere.
        a.connect_as(role).await;
        let mut group = url::Url::parse(&a.database_url).unwrap();
        group.set_username(role.name()).unwrap();
        let refused = connect_url(group.as_str()).await.err().unwrap();
        assert_eq!(refused.code().map(|c| c.code()), Some("28000"), "{refused}");
    }
    // Passwords are per deployment: setting A's leaves B's as they were.
    fleet_store::set_role_passwords(&a.database_url, &[(DbRole::Api, "a-secret".into())])
        .await
        .unwrap();
    let has_password = |login: String| {
        let url = a.database_url.clone();
        async move {
            let (c, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(conn);
            c.query_one(
                "SELECT rolpassword IS NOT NULL FROM pg_authid WHERE rolname = $1",
                &[&login],
            )
            .await
            .unwrap()
            .get::<_, bool>(0)
        }
    };
    let prefix_b = RolePrefix::of(&b.database_url).unwrap();
    assert!(has_password(DbRole::Api.login_name(&prefix_a)).await);
    assert!(!has_password(DbRole::Api.login_name(&prefix_b)).await);
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn every_table_is_granted_to_some_component() {
    // A migration that adds a table must say which components use it: a table no role may
    // touch is one no worker can read once it runs with its own role. The exceptions are
    // the owner's alone on purpose: which quorum policy is in force, and its record, are
    // the deployment's decision; intake reads the version in force through
    // `fleet_policy_in_force`, and the insert trigger reads the rules with the owner's rights.
    let owner_only = [
        "policies",
        "policy_defaults",
        "policy_assignments",
        "policy_changes",
    ];
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    let roles: Vec<&str> = DbRole::ALL.iter().map(|r| r.name()).collect();
    let ungranted: Vec<String> = fleet_tests::first_column(
        &sql,
        "SELECT t.tablename FROM pg_tables t
             WHERE t.schemaname = 'public' AND t.tablename <> '_sqlx_migrations'
               AND t.tablename <> ALL($2)
               AND NOT EXISTS (SELECT FROM information_schema.role_table_grants g
                               WHERE g.table_name = t.tablename AND g.grantee = ANY($1))
               AND NOT EXISTS (SELECT FROM information_schema.role_column_grants g
                               WHERE g.table_name = t.tablename AND g.grantee = ANY($1))",
        &[&roles, &owner_only.to_vec()],
    )
    .await;
    assert!(
        ungranted.is_empty(),
        "tables no component role is granted: {ungranted:?}"
    );
    fleet.stop().await;
}

/// Whether `login` holds `privilege` in this database.
async fn holds(sql: &tokio_postgres::Client, login: &str, privilege: Privilege) -> bool {
    let row = match privilege {
        Privilege::Table(table, p) => {
            sql.query_one(
                "SELECT has_table_privilege($1, format('public.%I', $2::text), $3)",
                &[&login, &table, &p],
            )
            .await
        }
        Privilege::Column(table, column, p) => {
            sql.query_one(
                "SELECT has_column_privilege($1, format('public.%I', $2::text), $3, $4)",
                &[&login, &table, &column, &p],
            )
            .await
        }
        Privilege::Function(signature) => {
            sql.query_one(
                "SELECT has_function_privilege($1, $2, 'EXECUTE')",
                &[&login, &signature],
            )
            .await
        }
    };
    row.unwrap_or_else(|e| panic!("asking about {privilege:?}: {e}"))
        .get(0)
}

#[tokio::test]
async fn each_components_store_type_promises_only_what_its_role_is_granted() {
    // The store's types give each component a set of capabilities (`StoreAs<R>`); the
    // database decides. A capability given to a component whose role lacks one of its
    // privileges would compile and then fail in production with "permission denied"; one
    // given to no role but the owner must be held by none of them.
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    let prefix = RolePrefix::of(&fleet.database_url).unwrap();
    let mut missing = Vec::new();
    let mut leaked = Vec::new();
    for role in DbRole::ALL {
        let login = role.login_name(&prefix);
        for &capability in Capability::ALL {
            let held_by_type = capability.holders().contains(&role);
            for &privilege in capability.privileges() {
                let granted = holds(&sql, &login, privilege).await;
                if held_by_type && !granted {
                    missing.push(format!("{role:?} {capability:?} {privilege:?}"));
                }
                if capability == Capability::Administer && granted {
                    leaked.push(format!("{role:?} {privilege:?}"));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "capabilities the types give a component whose role lacks the grant: {missing:#?}"
    );
    assert!(
        leaked.is_empty(),
        "the owner's administration granted to a component: {leaked:#?}"
    );
    fleet.stop().await;
}
