//! The deployment, not the agent, decides which quorum policy governs: an intent naming
//! another version than the one in force for its tenant and action is refused at both
//! doors; amounts are banded per currency; and whoever inserts an operation — each
//! component's database role, the owner — cannot store it under another policy or with a
//! lower quorum than the policy asks, nor write which policy is in force.

use fleet_core::intent::Action;
use fleet_core::Role;
use fleet_store::DbRole;
use fleet_tests::{
    answer_of, hash_of, intent, op_of, policies, two_columns, with_amount, ApiProcess, TestFleet,
    TENANT,
};
use reqwest::StatusCode;
use serde_json::{json, Value};

const CHECK_VIOLATION: &str = "23514";
const PERMISSION_DENIED: &str = "42501";
/// integrity_constraint_violation: an immutable column changed.
const IMMUTABLE: &str = "23000";

/// The SQLSTATE and constraint of a refused statement, or "ok" when it ran.
async fn attempt(
    client: &tokio_postgres::Client,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> (String, Option<String>) {
    answer_of(client.execute(sql, params).await)
}

fn payment(amount_minor: i64, currency: &str) -> Value {
    let mut i = with_amount(intent(), json!(amount_minor));
    i["payload"]["currency"] = json!(currency);
    i
}

/// The 422 the API answers `i` with, as `(code, field)`.
async fn api_refusal(fleet: &TestFleet, api: &ApiProcess, agent: &str, i: &Value) -> Value {
    let response = api.submit(&fleet.http, agent, i).await;
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = response.json().await.unwrap();
    body["error"].clone()
}

#[tokio::test]
async fn an_agent_naming_payments_v3_where_v4_is_in_force_is_refused_at_both_doors() {
    let mut fleet = TestFleet::start().await;
    fleet.spawn_prepare();
    let api = fleet.spawn_api(&[]).await;
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    fleet
        .assign_policy(Some(TENANT), "payment.create", "payments-v4")
        .await;

    // The queue: dead-lettered with the reason, nothing written.
    let v3 = intent();
    fleet.refused_at_intake(&v3, "policy_not_in_force").await;
    // The API: the same reason, naming the field, nothing written.
    let v3_again = intent();
    assert_eq!(
        api_refusal(&fleet, &api, &agent, &v3_again).await,
        json!({"code": "policy_not_in_force", "field": "policy_version"})
    );
    assert_eq!(fleet.count("SELECT count(*) FROM operations").await, 0);

    // Confirming the policy in force is accepted, under its rules (a first payment to
    // the payee is flagged; payments-v4 asks one approver more for it).
    let mut v4 = intent();
    v4["policy_version"] = json!("payments-v4");
    let view = api.submitted(&fleet.http, &agent, &v4).await;
    assert_eq!(view["policy_version"], "payments-v4");
    assert_eq!(view["approvals_required"], 2, "{view}");

    // Another tenant keeps the deployment's default.
    let mut other = intent();
    other["tenant_id"] = json!("org_default");
    fleet.submitted(&other).await;
    fleet.stop().await;
}

#[tokio::test]
async fn nine_billion_usd_asks_at_least_what_kzt_asks_and_an_unbanded_currency_is_refused() {
    let mut fleet = TestFleet::start().await;
    fleet.spawn_prepare();
    let api = fleet.spawn_api(&[]).await;
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let mut asked = Vec::new();
    for currency in ["KZT", "USD"] {
        let view = api
            .submitted(&fleet.http, &agent, &payment(900_000_000_000, currency))
            .await;
        let op = view["operation_id"].as_str().unwrap().to_owned();
        asked.push((
            view["approvals_required"].as_i64().unwrap(),
            i64::from(fleet.row(&op).await.signatures_required),
        ));
    }
    let (kzt, usd) = (asked[0], asked[1]);
    assert!(usd.0 >= kzt.0 && usd.1 >= kzt.1, "USD {usd:?}, KZT {kzt:?}");
    assert!(kzt.0 >= 2, "{kzt:?}");

    // A currency the policy has no bands for: refused at both doors, never one approver.
    fleet
        .refused_at_intake(&payment(100, "AED"), "currency_not_banded")
        .await;
    assert_eq!(
        api_refusal(&fleet, &api, &agent, &payment(100, "AED")).await,
        json!({"code": "currency_not_banded", "field": "payload.currency"})
    );
    fleet.stop().await;
}

/// Every component role, as it connects: none may lower a quorum, pick another policy or
/// write which policy is in force, even bypassing its own code.
#[tokio::test]
async fn no_component_role_can_lower_a_quorum_pick_a_policy_or_write_an_assignment() {
    let fleet = TestFleet::start().await;
    fleet
        .assign_policy(Some(TENANT), "payment.create", "payments-v4")
        .await;
    // 1,500,000.00 KZT under payments-v4: 2 approvers, both signed.
    let large = with_amount(intent(), json!(150_000_000));
    let insert =
        "INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash,
                      policy_version, data_version, idempotency_key, approval_expires_at,
                      approvals_required, signatures_required)
                  VALUES ($1, 'org_482', 'payment.create', 'payments', $3, $2, $4, 'inv_9182@7', $1,
                          now() + interval '1 hour', $5, $6)";
    // One stored as the policy asks, for the updates below.
    let stored = op_of(&intent());
    let owner = fleet.sql().await;
    let got = attempt(
        &owner,
        insert,
        &[
            &stored,
            &hash_of(&large),
            &large["payload"],
            &"payments-v4",
            &2i16,
            &2i16,
        ],
    )
    .await;
    assert_eq!(got, ("ok".to_owned(), None));
    for role in DbRole::ALL {
        let client = fleet.connect_as(role).await;
        // No role lowers a stored quorum: the columns are not its to write, or immutable.
        let (code, _) = attempt(
            &client,
            "UPDATE operations SET approvals_required = 1, signatures_required = 0
             WHERE operation_id = $1",
            &[&stored],
        )
        .await;
        assert!(
            code == PERMISSION_DENIED || code == IMMUTABLE,
            "{} lowers a quorum: {code}",
            role.name()
        );
        let intake = matches!(role, DbRole::Api | DbRole::Prepare);
        let op = op_of(&intent());
        let hash = hash_of(&large);
        let cases: [(&str, i16, i16, &str); 3] = [
            // A lower quorum under the policy in force.
            ("payments-v4", 1, 0, "operations_quorum_of_policy"),
            // Enough approvers, too few signatures.
            ("payments-v4", 2, 0, "operations_quorum_of_policy"),
            // The weaker policy, which is not in force for the tenant.
            ("payments-v3", 2, 2, "operations_policy_in_force"),
        ];
        for (version, approvers, signed, constraint) in cases {
            let got = attempt(
                &client,
                insert,
                &[&op, &hash, &large["payload"], &version, &approvers, &signed],
            )
            .await;
            if intake {
                assert_eq!(
                    got,
                    (CHECK_VIOLATION.to_owned(), Some(constraint.to_owned())),
                    "{} {version} {approvers}/{signed}",
                    role.name()
                );
            } else {
                assert_eq!(got.0, PERMISSION_DENIED, "{} inserts", role.name());
            }
        }
        for statement in [
            "INSERT INTO policy_assignments (tenant_id, action, policy_version, assigned_by)
             VALUES ('org_482', 'payment.create', 'payments-v3', 'mallory')",
            "UPDATE policy_assignments SET policy_version = 'payments-v3'",
            "DELETE FROM policy_assignments",
            "UPDATE policy_defaults SET policy_version = 'payments-v3'",
            "INSERT INTO policy_defaults (action, policy_version, assigned_by)
             VALUES ('refund.create', 'refunds-v1', 'mallory')",
            "UPDATE policies SET rules = '{}'",
            "INSERT INTO policies (policy_version, rules, source_text) VALUES ('weak', '{}', '')",
            "DELETE FROM policy_changes",
        ] {
            assert_eq!(
                attempt(&client, statement, &[]).await.0,
                PERMISSION_DENIED,
                "{}: {statement}",
                role.name()
            );
        }
    }
    let quorum = owner
        .query_one(
            "SELECT approvals_required, signatures_required FROM operations WHERE operation_id = $1",
            &[&stored],
        )
        .await
        .unwrap();
    assert_eq!((quorum.get::<_, i16>(0), quorum.get::<_, i16>(1)), (2, 2));
    // The owner is held to the same floor (it could drop the trigger, but no statement
    // of the fleet's inserts around it).
    let got = attempt(
        &owner,
        insert,
        &[
            &op_of(&intent()),
            &hash_of(&large),
            &large["payload"],
            &"payments-v4",
            &1i16,
            &0i16,
        ],
    )
    .await;
    assert_eq!(
        got,
        (
            CHECK_VIOLATION.to_owned(),
            Some("operations_quorum_of_policy".to_owned())
        )
    );
    assert_eq!(fleet.count("SELECT count(*) FROM operations").await, 1);
    assert_eq!(
        fleet
            .count("SELECT count(*) FROM policy_assignments WHERE policy_version = 'payments-v4'")
            .await,
        1
    );
    fleet.stop().await;
}

/// One rule, two languages: the floor the database derives on insert
/// (`fleet_policy_floor`) is the floor fleet-core computes (`Policy::floor`), for every
/// shipped policy, action, currency band edge and risk flag.
#[tokio::test]
async fn the_database_and_core_derive_the_same_floor_for_every_case() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    let set = policies();
    let mut payloads: Vec<Value> = Vec::new();
    for currency in ["KZT", "USD", "EUR", "JPY", "KWD", "AED"] {
        for amount in [
            1_i64,
            999_999,
            1_000_000,
            99_999_999,
            100_000_000,
            9_007_199_254_740_991,
        ] {
            payloads.push(json!({"invoice_id": "inv_1", "beneficiary_id": "vendor_77", "amount_minor": amount, "currency": currency}));
            // A charge (charges-v1): banded by the same members.
            payloads.push(json!({"invoice_id": "inv_1", "customer": "cus_1", "payment_method": "pm_1", "amount_minor": amount, "currency": currency}));
        }
    }
    payloads
        .push(json!({"payment_id": "pay_1", "amount_minor": 5, "currency": "AED", "reason": "r"}));
    payloads.push(json!({"expected_version": 3, "patch": {"stage": "won"}}));
    let mut cases = 0;
    for policy in set.policies() {
        let rules = policy.rules();
        for action in Action::ALL {
            for payload in &payloads {
                for flagged in [false, true] {
                    let core = policy.floor(action, payload, flagged);
                    let row = sql
                        .query_one(
                            "SELECT approvers, signed, refusal FROM fleet_policy_floor($1, $2, $3, $4)",
                            &[&rules, &action.wire_name(), payload, &flagged],
                        )
                        .await
                        .unwrap();
                    let db: (Option<i32>, Option<i32>, Option<String>) =
                        (row.get(0), row.get(1), row.get(2));
                    let expected = match core {
                        Ok(r) => (
                            Some(i32::from(r.approvers)),
                            Some(i32::from(r.signed)),
                            None,
                        ),
                        Err(fleet_core::PolicyRefusal::ActionNotInPolicy) => {
                            (None, None, Some("action_not_in_policy".to_owned()))
                        }
                        Err(fleet_core::PolicyRefusal::CurrencyNotBanded) => {
                            (db.0, db.1, Some("currency_not_banded".to_owned()))
                        }
                        Err(other) => panic!("{other:?}"),
                    };
                    assert_eq!(
                        db,
                        expected,
                        "{} {} {payload} flagged={flagged}",
                        policy.version(),
                        action.wire_name()
                    );
                    cases += 1;
                }
            }
        }
    }
    assert!(cases > 500, "{cases} cases");
    fleet.stop().await;
}

/// `fleetctl policy <args>` as the administrator `root-admin`, whatever its exit status.
async fn policy_command(fleet: &TestFleet, args: &[&str]) -> std::process::Output {
    let mut all = vec!["policy"];
    all.extend_from_slice(args);
    fleet
        .fleetctl_with(&[("FLEET_ADMIN", "root-admin")], &all)
        .await
}

#[tokio::test]
async fn fleetctl_assigns_a_policy_to_a_tenant_and_every_change_is_recorded_with_who() {
    let fleet = TestFleet::start().await;
    let out = policy_command(
        &fleet,
        &[
            "assign",
            "--action",
            "payment.create",
            "--tenant",
            "org_482",
            "payments-v4",
        ],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("payments-v4 is in force for payment.create for tenant org_482"),
        "{out:?}"
    );
    // A policy the deployment does not have is refused, naming it.
    let out = policy_command(
        &fleet,
        &["assign", "--action", "payment.create", "payments-v9"],
    )
    .await;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("payments-v9"),
        "{out:?}"
    );
    // A policy that does not name the action is refused too.
    let out = policy_command(
        &fleet,
        &["assign", "--action", "refund.create", "payments-v4"],
    )
    .await;
    assert!(!out.status.success());

    let out = policy_command(&fleet, &["list"]).await;
    let listing = String::from_utf8_lossy(&out.stdout).to_string();
    for line in [
        [
            "(default)",
            "payment.create",
            "payments-v3",
            "in-force.toml",
        ],
        ["org_482", "payment.create", "payments-v4", "root-admin"],
    ] {
        assert!(
            listing.lines().any(|l| line
                .iter()
                .all(|cell| l.split_whitespace().any(|w| w == *cell))),
            "{line:?} in {listing}"
        );
    }
    let out = policy_command(
        &fleet,
        &[
            "unassign",
            "--action",
            "payment.create",
            "--tenant",
            "org_482",
        ],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    let changes: Vec<(String, String)> = two_columns(
        &fleet.sql().await,
        "SELECT change, actor FROM policy_changes WHERE tenant_id = 'org_482' ORDER BY change_id",
        &[],
    )
    .await;
    assert_eq!(
        changes,
        [
            ("assigned".to_owned(), "root-admin".to_owned()),
            ("unassigned".to_owned(), "root-admin".to_owned())
        ]
    );
    fleet.stop().await;
}
