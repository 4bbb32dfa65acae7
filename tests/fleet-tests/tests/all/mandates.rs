//! Standing mandates through the real fleet (fleet-api and two fleet-execute processes,
//! the provider simulator over HTTP, payments-v5 in force for the tenant): a mandate an
//! approver signed approves, at claim, the payments it covers, and the database takes its
//! budget in the claim's transaction, so two executes racing pay at most the budget; a
//! mandate revoked mid-run pays nothing after the revocation's commit (every provider
//! request arrived before it, by the simulator's log), and its events are published; no
//! component's database role can write a mandate or widen one; and a revoked approval of
//! an unclaimed operation is never claimed on.

use chrono::{Duration, Utc};
use fleet_broker::Queue;
use fleet_core::approval_statement::format_expiry;
use fleet_core::{Role, Status};
use fleet_store::DbRole;
use fleet_tests::{
    answer_of, eventually_within, hash_of, intent, op_of, ApiProcess, Signer, TestFleet,
    WorkerProcess,
};
use reqwest::StatusCode;
use serde_json::{json, Value};

const TENANT: &str = "org_482";
const AGENT: &str = "billing-bot";
/// The seed payment's amount: what the payee was paid before, so the mandated payments
/// carry no risk cue (not a first payment, not above the usual amount).
const SEED_MINOR: i64 = 10_000;

/// A fleet with the API, two execute processes, an agent and an approver with a key.
struct Mandated {
    fleet: TestFleet,
    api: ApiProcess,
    agent: String,
    alice: Signer,
    /// vendor_77's account fingerprint, as the directory showed it at intake.
    fingerprint: String,
    /// The two execute processes (ended when dropped).
    _executes: Vec<WorkerProcess>,
}

/// A payment of `amount_minor` KZT to vendor_77 for its own invoice, under payments-v5.
fn payment(amount_minor: i64) -> Value {
    let mut i = intent();
    i["policy_version"] = json!("payments-v5");
    i["payload"]["amount_minor"] = json!(amount_minor);
    i["payload"]["invoice_id"] = json!(format!("inv_m{amount_minor}"));
    i
}

async fn mandated(execute_env: &[(&str, &str)]) -> Mandated {
    let fleet = TestFleet::with_mandates().await;
    let api = fleet.spawn_api(&[]).await;
    let agent = fleet.token(AGENT, Role::Agent, &[TENANT]).await;
    let alice = fleet.signer("alice").await;
    let executes = (0..2)
        .map(|_| fleet.spawn_process("fleet-execute", execute_env))
        .collect();
    // One payment to vendor_77 approved by a person and paid: the payee and its account
    // are known to the tenant from then on.
    let fingerprint = fleet
        .paid_before(&api, &agent, &alice.token, &payment(SEED_MINOR))
        .await;
    Mandated {
        fleet,
        api,
        agent,
        alice,
        fingerprint,
        _executes: executes,
    }
}

impl Mandated {
    /// Submits `n` payments of SEED_MINOR + 1 … SEED_MINOR + n (each its own amount and
    /// invoice: no possible duplicate); each is stored pending with no risk cue.
    async fn payments(&self, n: i64) -> Vec<(String, i64)> {
        let mut ops = Vec::new();
        for k in 1..=n {
            let amount = SEED_MINOR + k;
            let p = payment(amount);
            let view = self.api.submitted(&self.fleet.http, &self.agent, &p).await;
            assert_eq!(view["risk"], json!([]), "{view}");
            assert_eq!(view["approval_status"], "pending");
            ops.push((op_of(&p), amount));
        }
        ops
    }

    /// A mandate statement for vendor_77's account and the agent's intents, signed by
    /// Alice.
    fn signed(&self, per_op: i64, budget: i64, count: i64) -> (String, Value) {
        self.signed_for(per_op, budget, count, json!(AGENT))
    }

    /// [`Mandated::signed`] for the intents of `for_principal` (null: anyone's).
    fn signed_for(
        &self,
        per_op: i64,
        budget: i64,
        count: i64,
        for_principal: Value,
    ) -> (String, Value) {
        let id = format!("md_{}", ulid::Ulid::new());
        let statement = json!({
            "statement": "fleet.mandate.v1",
            "mandate_id": id,
            "tenant_id": TENANT,
            "actions": ["payment.create"],
            "payees": [{"id": "vendor_77", "account_fingerprint": self.fingerprint}],
            "currency": "KZT",
            "per_operation_max_minor": per_op,
            "budget_minor": budget,
            "count_limit": count,
            "valid_from": format_expiry(Utc::now() - Duration::minutes(1)),
            "valid_until": format_expiry(Utc::now() + Duration::hours(1)),
            "for_principal": for_principal,
        });
        let bytes = fleet_core::canonical_json(&statement).into_bytes();
        let body = json!({
            "statement": statement,
            "key_id": self.alice.key.public_key().key_id().as_str(),
            "signature": self.alice.key.sign(&bytes).to_text(),
        });
        (id, body)
    }

    /// Stores the mandate as Alice: 201 and its view.
    async fn grant(&self, body: &Value) -> Value {
        let response = self
            .api
            .post(&self.fleet.http, &self.alice.token, "/v1/mandates", body)
            .await;
        let status = response.status();
        let view: Value = response.json().await.unwrap();
        assert_eq!(status, StatusCode::CREATED, "{view}");
        view
    }

    /// Rings execute for every operation again: both processes get bells for the same
    /// operations and race on them.
    async fn ring_all(&self, ops: &[(String, i64)]) {
        for (op, _) in ops {
            self.fleet.ring_execute(op).await;
        }
    }

    /// The operations' (status, approval status, decided_by), by id.
    async fn states(&self, ops: &[(String, i64)]) -> Vec<(String, String, String, Option<String>)> {
        let ids: Vec<&str> = ops.iter().map(|(o, _)| o.as_str()).collect();
        self.fleet
            .sql()
            .await
            .query(
                "SELECT operation_id, status, approval_status, decided_by FROM operations
                 WHERE operation_id = ANY($1) ORDER BY operation_id",
                &[&ids],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect()
    }

    /// Waits (a minute at most) until at least `n` of `ops` succeeded.
    async fn paid_at_least(&self, ops: &[(String, i64)], n: i64, what: &str) {
        let ids: Vec<String> = ops.iter().map(|(o, _)| o.clone()).collect();
        let sql = self.fleet.sql().await;
        eventually_within(std::time::Duration::from_secs(60), what, || {
            let (sql, ids) = (&sql, &ids);
            async move {
                let paid: i64 = sql
                    .query_one(
                        "SELECT count(*) FROM operations WHERE operation_id = ANY($1) AND status = 'succeeded'",
                        &[ids],
                    )
                    .await
                    .ok()?
                    .get(0);
                (paid >= n).then_some(())
            }
        })
        .await;
    }

    /// Waits until no operation of `ops` is claimed and unsettled and the execute queue
    /// is empty: the run is over.
    async fn settled(&self, ops: &[(String, i64)]) {
        self.fleet.drained(Queue::OperationsExecute).await;
        let ids: Vec<String> = ops.iter().map(|(o, _)| o.clone()).collect();
        let sql = self.fleet.sql().await;
        eventually_within(
            std::time::Duration::from_secs(60),
            "every claimed operation to settle",
            || {
                let (sql, ids) = (&sql, &ids);
                async move {
                    let open: i64 = sql
                        .query_one(
                            "SELECT count(*) FROM operations WHERE operation_id = ANY($1)
                               AND status NOT IN ('not_started', 'succeeded')",
                            &[ids],
                        )
                        .await
                        .ok()?
                        .get(0);
                    (open == 0).then_some(())
                }
            },
        )
        .await;
    }

    async fn stop(self) {
        drop(self.api);
        self.fleet.stop().await;
    }
}

/// The mandate's counters and revocation as stored.
async fn mandate_row(fleet: &TestFleet, id: &str) -> (i64, i32, bool) {
    let row = fleet
        .sql()
        .await
        .query_one(
            "SELECT spent_minor, used_count, revoked_at IS NOT NULL FROM mandates WHERE mandate_id = $1",
            &[&id],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1), row.get(2))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_executes_racing_on_a_budget_of_thirty_pay_exactly_thirty() {
    let m = mandated(&[]).await;
    let ops = m.payments(50).await;
    // Amounts 10,001 … 10,050: any 30 of them fit in 30 × 10,050, no 31 of them do
    // (31 × 10,001 is more), so the budget is exactly thirty payments whichever win.
    let budget = 30 * (SEED_MINOR + 50);
    let (id, body) = m.signed(SEED_MINOR + 50, budget, 50);
    let view = m.grant(&body).await;
    assert_eq!(view["status"], "active");
    m.ring_all(&ops).await;
    let fleet = &m.fleet;
    let sql = fleet.sql().await;
    m.paid_at_least(&ops, 30, "thirty payments to succeed")
        .await;
    // More bells for everything: nothing more is paid however often execute is asked.
    m.ring_all(&ops).await;
    m.settled(&ops).await;
    let states = m.states(&ops).await;
    let paid: Vec<_> = states.iter().filter(|s| s.1 == "succeeded").collect();
    let waiting: Vec<_> = states
        .iter()
        .filter(|s| s.1 == "not_started" && s.2 == "pending" && s.3.is_none())
        .collect();
    assert_eq!((paid.len(), waiting.len()), (30, 20), "{states:?}");
    let by_mandate = format!("mandate:{id}");
    assert!(paid
        .iter()
        .all(|s| s.3.as_deref() == Some(by_mandate.as_str())));
    // The provider holds exactly the thirty, once each.
    let mut paid_sum = 0;
    for (op, amount) in &ops {
        let effects = fleet.sim_effects(op).await;
        if states.iter().any(|s| &s.0 == op && s.1 == "succeeded") {
            assert_eq!(effects, 1, "{op}");
            paid_sum += amount;
        } else {
            assert_eq!(effects, 0, "{op}");
        }
    }
    assert_eq!(mandate_row(fleet, &id).await, (paid_sum, 30, false));
    assert!(paid_sum <= budget);
    // History and events name the mandate.
    let (op, _) = ops
        .iter()
        .find(|(o, _)| paid.iter().any(|s| &s.0 == o))
        .unwrap();
    let history = fleet.history(op).await;
    let approved = history
        .iter()
        .find(|e| e.actor == by_mandate)
        .expect("an approved row by the mandate");
    assert_eq!(approved.evidence.as_ref().unwrap()["mandate_id"], json!(id));
    let events: i64 = sql
        .query_one(
            "SELECT count(*) FROM operation_outbox WHERE operation_id = $1 AND event_type = 'approved'
               AND data->>'decided_by' = $2",
            &[op, &by_mandate],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(events, 1, "the approved event names the mandate");
    // What is left shows as available, nothing revoked; an agent asks "am I covered?".
    let (_, standing) = m
        .api
        .get(&fleet.http, &m.agent, &format!("/v1/mandates/{id}"))
        .await;
    assert_eq!(standing["used_count"], 30);
    assert_eq!(standing["available_minor"], json!(budget - paid_sum));
    assert_eq!(standing["revoked_minor"], 0);
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mandate_revoked_mid_run_pays_nothing_after_the_revocations_commit() {
    // One operation at a time per process: claims trickle, as the slow answers come.
    let m = mandated(&[("CONCURRENCY", "1"), ("PREFETCH", "1")]).await;
    let ops = m.payments(50).await;
    // Every payment answers slowly, so calls are in flight when the revocation comes.
    m.fleet
        .sim_fault(json!({"route": "POST /v1/payments", "kind": "delay", "delay_ms": 250, "probability": 1.0}))
        .await;
    let budget = 50 * (SEED_MINOR + 50);
    let (id, body) = m.signed(SEED_MINOR + 50, budget, 50);
    m.grant(&body).await;
    let fleet = &m.fleet;
    let sql = fleet.sql().await;
    m.paid_at_least(&ops, 3, "a few payments to be paid").await;
    let response = m
        .api
        .post(
            &fleet.http,
            &m.alice.token,
            &format!("/v1/mandates/{id}/revoke"),
            &json!({}),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let revoked: Value = response.json().await.unwrap();
    assert_eq!(revoked["status"], "revoked");
    // `revoked_at` is the database's clock once every call holding the mandate was
    // answered, taken before the commit: a request that arrived before it arrived before
    // the commit.
    let revoked_at: chrono::DateTime<Utc> = sql
        .query_one(
            "SELECT revoked_at FROM mandates WHERE mandate_id = $1",
            &[&id],
        )
        .await
        .unwrap()
        .get(0);
    m.ring_all(&ops).await;
    m.settled(&ops).await;
    let states = m.states(&ops).await;
    let mut paid = Vec::new();
    for (op, status, approval, decided_by) in &states {
        let requests = fleet.sim_requests(Some(op)).await;
        for r in &requests {
            let arrived = chrono::DateTime::parse_from_rfc3339(r["arrived_at"].as_str().unwrap())
                .unwrap()
                .with_timezone(&Utc);
            assert!(
                arrived < revoked_at,
                "{op}: a request arrived at {arrived}, after the revocation ({revoked_at})"
            );
        }
        if status == "succeeded" {
            paid.push(op.clone());
        } else {
            assert_eq!(
                (status.as_str(), approval.as_str(), decided_by),
                ("not_started", "pending", &None),
                "{op} was not paid before the revocation and waits for a person"
            );
            assert_eq!(fleet.sim_effects(op).await, 0, "{op}");
        }
    }
    assert!(
        paid.len() >= 3 && paid.len() < ops.len(),
        "the revocation came mid-run: {} of {} paid",
        paid.len(),
        ops.len()
    );
    let paid_sum: i64 = ops
        .iter()
        .filter(|(o, _)| paid.contains(o))
        .map(|(_, a)| a)
        .sum();
    let (spent, used, is_revoked) = mandate_row(fleet, &id).await;
    assert_eq!(
        (spent, used as usize, is_revoked),
        (paid_sum, paid.len(), true)
    );
    // The rest of the budget is shown as revoked, not spent, and approves nothing.
    let (_, standing) = m
        .api
        .get(&fleet.http, &m.alice.token, &format!("/v1/mandates/{id}"))
        .await;
    assert_eq!(standing["revoked_minor"], json!(budget - paid_sum));
    assert_eq!(standing["available_minor"], 0);
    // The mandate's events, in its own order, for agents on fleet.events: created, a use
    // per operation it approved, revoked by Alice.
    let events: Vec<(i32, String, Value)> = sql
        .query(
            "SELECT sequence, event_type, data FROM operation_outbox WHERE operation_id = $1 ORDER BY sequence",
            &[&id],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let sequences: Vec<i32> = events.iter().map(|e| e.0).collect();
    assert_eq!(sequences, (1..=events.len() as i32).collect::<Vec<_>>());
    assert_eq!(events[0].1, "mandate_created");
    let last = events.last().unwrap();
    assert_eq!(
        (last.1.as_str(), &last.2["event"]["actor"]),
        ("mandate_revoked", &json!("alice"))
    );
    assert_eq!(last.2["status"], "revoked");
    let used_ops: Vec<&Value> = events
        .iter()
        .filter(|e| e.1 == "mandate_used")
        .map(|e| &e.2["event"]["evidence"]["operation_id"])
        .collect();
    for op in &paid {
        assert!(used_ops.contains(&&json!(op)), "{op}'s use is an event");
    }
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_component_role_writes_a_mandate_or_widens_one() {
    let m = mandated(&[]).await;
    let ops = m.payments(1).await;
    let (id, body) = m.signed(SEED_MINOR + 1, SEED_MINOR + 1, 1);
    m.grant(&body).await;
    m.settled(&ops).await;
    let fleet = &m.fleet;
    let insert = format!(
        "INSERT INTO mandates (mandate_id, tenant_id, actions, currency, per_operation_max_minor,
             budget_minor, count_limit, valid_from, valid_until, statement, mandate_hash, signed_by,
             key_id, signature)
         SELECT 'md_{}', tenant_id, actions, currency, per_operation_max_minor, 100000000,
             1000, valid_from, valid_until, statement, mandate_hash, signed_by, key_id, signature
         FROM mandates WHERE mandate_id = '{id}'",
        ulid::Ulid::new()
    );
    let widen = format!("UPDATE mandates SET budget_minor = 100000000 WHERE mandate_id = '{id}'");
    let refill =
        format!("UPDATE mandates SET spent_minor = 0, used_count = 0 WHERE mandate_id = '{id}'");
    let unrevoke_uses = format!("DELETE FROM mandate_uses WHERE mandate_id = '{id}'");
    let forged = format!(
        "SELECT fleet_mandate_create(statement || '{{\"budget_minor\": 100000000}}'::jsonb, mandate_hash, signed_by, key_id, signature)
         FROM mandates WHERE mandate_id = '{id}'"
    );
    for role in [
        DbRole::Prepare,
        DbRole::Execute,
        DbRole::Api,
        DbRole::Reconcile,
        DbRole::WebhookIngest,
        DbRole::Relay,
    ] {
        let client = fleet.connect_as(role).await;
        for sql in [&insert, &widen, &refill, &unrevoke_uses] {
            let (code, _) = answer_of(client.execute(sql.as_str(), &[]).await);
            assert_eq!(code, "42501", "{} ran: {sql}", role.name());
        }
        if role != DbRole::Api {
            let (code, _) = answer_of(client.execute(forged.as_str(), &[]).await);
            assert_eq!(code, "42501", "{} may not store mandates", role.name());
        }
    }
    // Not even the owner changes what was signed.
    let owner = fleet.sql().await;
    let (code, _) = answer_of(owner.execute(widen.as_str(), &[]).await);
    assert_eq!(code, "23000");
    // And the counters stay within the signed limits whoever writes them.
    let over =
        format!("UPDATE mandates SET spent_minor = budget_minor + 1 WHERE mandate_id = '{id}'");
    let (code, constraint) = answer_of(owner.execute(over.as_str(), &[]).await);
    assert_eq!(
        (code.as_str(), constraint.as_deref()),
        ("23514", Some("mandates_within_budget"))
    );
    assert_eq!(mandate_row(fleet, &id).await, (SEED_MINOR + 1, 1, false));
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mandate_covers_only_what_was_signed_and_only_with_the_signers_key() {
    let m = mandated(&[]).await;
    let fleet = &m.fleet;
    // Signed by another key than the one named: refused before anything is stored.
    let (_, mut body) = m.signed(SEED_MINOR + 1, SEED_MINOR * 10, 10);
    let other = fleetctl::key::new_key().unwrap();
    let bytes = fleet_core::canonical_json(&body["statement"]).into_bytes();
    body["signature"] = json!(other.sign(&bytes).to_text());
    let response = m
        .api
        .post(&fleet.http, &m.alice.token, "/v1/mandates", &body)
        .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(fleet.count("SELECT count(*) FROM mandates").await, 0);
    // An agent never makes one.
    let (_, body) = m.signed(SEED_MINOR + 1, SEED_MINOR * 10, 10);
    let response = m
        .api
        .post(&fleet.http, &m.agent, "/v1/mandates", &body)
        .await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    // A payment above the per-operation maximum waits for a person; one below is paid.
    let big = payment(SEED_MINOR + 2);
    m.api.submitted(&fleet.http, &m.agent, &big).await;
    let small = payment(SEED_MINOR + 1);
    m.api.submitted(&fleet.http, &m.agent, &small).await;
    let (_, body) = m.signed(SEED_MINOR + 1, SEED_MINOR * 10, 10);
    m.grant(&body).await;
    fleet.reaches(&op_of(&small), Status::Succeeded).await;
    fleet.ring_execute(&op_of(&big)).await;
    fleet.drained(Queue::OperationsExecute).await;
    fleet.still_pending(&op_of(&big)).await;
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_approval_of_an_unclaimed_operation_is_never_claimed() {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let agent = fleet.token(AGENT, Role::Agent, &[TENANT]).await;
    let alice = fleet.token("alice", Role::Approver, &[TENANT]).await;
    let bob = fleet.token("bob", Role::Approver, &[TENANT]).await;
    let p = intent();
    api.submitted(&fleet.http, &agent, &p).await;
    let op = op_of(&p);
    let approve = format!("/v1/operations/{op}/approve");
    let response = api
        .post(
            &fleet.http,
            &alice,
            &approve,
            &json!({"payload_hash": hash_of(&p)}),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let revoke = format!("/v1/operations/{op}/approvals/revoke");
    // Bob cannot take back Alice's approval.
    let response = api
        .post(&fleet.http, &bob, &revoke, &json!({"principal": "alice"}))
        .await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let response = api.post(&fleet.http, &alice, &revoke, &json!({})).await;
    assert_eq!(response.status(), StatusCode::OK);
    let view: Value = response.json().await.unwrap();
    assert_eq!(
        (
            view["approval_status"].clone(),
            view["approvals_received"].clone()
        ),
        (json!("pending"), json!(0))
    );
    let voided = fleet.history(&op).await;
    assert!(voided
        .iter()
        .any(|e| e.reason.map(|r| r.as_str()) == Some("approval_revoked")));
    // Execute, rung, claims nothing; the row waits for another approver.
    let mut fleet = fleet;
    fleet.spawn_execute();
    fleet.ring_execute(&op).await;
    fleet.drained(Queue::OperationsExecute).await;
    let row = fleet.row(&op).await;
    assert_eq!((row.status, row.fence), (Status::NotStarted, 0));
    assert_eq!(fleet.sim_posts(&op).await, 0);
    drop(api);
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_intent_from_the_queue_under_a_mandate_is_paid_on_the_sweepers_bell() {
    let mut m = mandated(&[]).await;
    // For anyone's intents: one from the queue has no agent principal here.
    let (id, body) = m.signed_for(SEED_MINOR + 5, 10 * SEED_MINOR, 10, Value::Null);
    m.grant(&body).await;
    // Prepare rings nothing; reconcile's sweeper finds the covered pending operation.
    m.fleet.spawn_prepare();
    m.fleet
        .spawn_reconcile(fleet_tests::contract(300), fleet_tests::fast_reconcile());
    let queued = payment(SEED_MINOR + 3);
    m.fleet.submit(&queued).await;
    let row = m.fleet.reaches(&op_of(&queued), Status::Succeeded).await;
    assert_eq!(row.decided_by, Some(format!("mandate:{id}")));
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleetctl_signs_shows_and_revokes_a_mandate() {
    let m = mandated(&[]).await;
    let key_path = std::env::temp_dir().join(format!("fleet-mandate-{}.key", ulid::Ulid::new()));
    fleetctl::key::write_private(&key_path, &m.alice.key).unwrap();
    let payee = format!("vendor_77={}", m.fingerprint);
    let until = format_expiry(Utc::now() + Duration::hours(1));
    let run = |args: Vec<String>| {
        let api = &m.api;
        let alice = m.alice.token.clone();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = api.fleetctl_as(&alice, &[], &args).await;
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "{stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            stdout
        }
    };
    let created = run([
        "mandate",
        "create",
        "--tenant",
        TENANT,
        "--payee",
        &payee,
        "--currency",
        "KZT",
        "--per-operation-max-minor",
        "20000",
        "--budget-minor",
        "100000",
        "--count-limit",
        "5",
        "--valid-until",
        &until,
        "--for",
        AGENT,
        "--key",
        key_path.to_str().unwrap(),
    ]
    .map(str::to_owned)
    .to_vec())
    .await;
    std::fs::remove_file(&key_path).ok();
    assert!(
        created
            .contains("each at most 200.00 KZT, in all at most 1,000.00 KZT, at most 5 operations"),
        "{created}"
    );
    let id = created
        .split_whitespace()
        .find(|w| w.starts_with("md_"))
        .expect("the mandate id")
        .to_owned();
    let shown = run(["mandate", "show", &id, "-o", "json"]
        .map(str::to_owned)
        .to_vec())
    .await;
    let view: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(
        (view["status"].clone(), view["budget_minor"].clone()),
        (json!("active"), json!(100_000))
    );
    let listed = run(["mandate", "list"].map(str::to_owned).to_vec()).await;
    assert!(listed.contains(&id), "{listed}");
    let revoked = run(["mandate", "revoke", &id].map(str::to_owned).to_vec()).await;
    assert!(
        revoked.contains("(revoked)") && revoked.contains("revoked 100000"),
        "{revoked}"
    );
    m.stop().await;
}
