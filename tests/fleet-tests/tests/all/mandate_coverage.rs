//! "Am I covered?" through the real fleet-api (HTTP and MCP, payments-v5 in force for the
//! tenant): an agent lists the mandates made for it with what is left of them, and asks
//! whether a would-be payment would be approved by one (yes with the mandate and what is
//! left after, or no with the reason); it can neither make, widen nor revoke a mandate, at
//! the API or over MCP. And the coverage rule in core and `fleet_mandate_covers` in the
//! database agree, case by case.

use chrono::{Duration, Utc};
use fleet_core::approval_statement::format_expiry;
use fleet_core::mandate::{Mandate, MandatedOperation};
use fleet_core::{Action, ApproverKey, Role};
use fleet_tests::{ApiProcess, Signer, TestFleet};
use reqwest::StatusCode;
use serde_json::{json, Value};

const TENANT: &str = "org_482";
const AGENT: &str = "billing-bot";
const FP: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

struct Covered {
    fleet: TestFleet,
    api: ApiProcess,
    agent: String,
    alice: Signer,
}

async fn covered() -> Covered {
    let fleet = TestFleet::with_mandates().await;
    let api = fleet.spawn_api(&[]).await;
    let agent = fleet.token(AGENT, Role::Agent, &[TENANT]).await;
    let alice = fleet.signer("alice").await;
    Covered {
        fleet,
        api,
        agent,
        alice,
    }
}

fn statement(for_principal: Value) -> Value {
    json!({
        "statement": "fleet.mandate.v1",
        "mandate_id": format!("md_{}", ulid::Ulid::new()),
        "tenant_id": TENANT,
        "actions": ["payment.create"],
        "payees": [{"id": "vendor_77", "account_fingerprint": FP}],
        "currency": "KZT",
        "per_operation_max_minor": 150_000,
        "budget_minor": 300_000,
        "count_limit": 5,
        "valid_from": format_expiry(Utc::now() - Duration::minutes(1)),
        "valid_until": format_expiry(Utc::now() + Duration::hours(1)),
        "for_principal": for_principal,
    })
}

impl Covered {
    /// `statement` signed with `key`, sent as `token`: (status, answer).
    async fn create(&self, token: &str, key: &ApproverKey, st: &Value) -> (StatusCode, Value) {
        let bytes = fleet_core::canonical_json(st).into_bytes();
        let body = json!({
            "statement": st,
            "key_id": key.public_key().key_id().as_str(),
            "signature": key.sign(&bytes).to_text(),
        });
        let response = self
            .api
            .post(&self.fleet.http, token, "/v1/mandates", &body)
            .await;
        (response.status(), response.json().await.unwrap_or_default())
    }

    async fn ask(&self, question: Value) -> (StatusCode, Value) {
        let response = self
            .api
            .post(
                &self.fleet.http,
                &self.agent,
                "/v1/mandates/coverage",
                &question,
            )
            .await;
        (response.status(), response.json().await.unwrap())
    }
}

fn question(payee: &str, amount: i64) -> Value {
    json!({"action": "payment.create", "payee": payee, "amount_minor": amount, "currency": "KZT"})
}

#[tokio::test]
async fn an_agent_sees_its_mandates_and_asks_whether_it_is_covered_over_http_and_mcp() {
    let c = covered().await;
    // No mandate yet.
    let (status, answer) = c.ask(question("vendor_77", 100_000)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        (&answer["covered"], &answer["reason"]),
        (&json!(false), &json!("no_active_mandate"))
    );
    let mine = statement(json!(AGENT));
    let (status, created) = c.create(&c.alice.token, &c.alice.key, &mine).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    // Another agent's mandate is not shown to this one.
    let (status, _) = c
        .create(
            &c.alice.token,
            &c.alice.key,
            &statement(json!("support-bot")),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let id = mine["mandate_id"].as_str().unwrap();
    let (_, yes) = c.ask(question("vendor_77", 100_000)).await;
    assert_eq!(yes["covered"], json!(true), "{yes}");
    assert_eq!(yes["mandate_id"], json!(id));
    assert_eq!(yes["available_after_minor"], json!(200_000));
    assert_eq!(yes["count_left_after"], json!(4));
    assert!(yes["conditions"]
        .as_array()
        .unwrap()
        .contains(&json!("payee_account_as_signed_at_intake")));
    for (q, reason) in [
        (question("vendor_77", 150_001), "above_per_operation_max"),
        (question("vendor_99", 100), "payee_not_allowed"),
        (
            json!({"action": "payment.create", "payee": "vendor_77", "amount_minor": 100, "currency": "USD"}),
            "other_currency",
        ),
        (
            json!({"action": "refund.create", "payee": "pay_1", "amount_minor": 100, "currency": "KZT"}),
            "no_active_mandate",
        ),
    ] {
        let (status, no) = c.ask(q).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            (&no["covered"], &no["reason"]),
            (&json!(false), &json!(reason)),
            "{no}"
        );
    }
    // The whole intent may be asked instead.
    let mut whole = fleet_tests::intent();
    whole["policy_version"] = json!("payments-v5");
    whole["payload"]["amount_minor"] = json!(90_000);
    let (_, by_intent) = c.ask(json!({"intent": whole})).await;
    assert_eq!(by_intent["covered"], json!(true), "{by_intent}");
    // A question the API cannot read names its member.
    let (status, bad) = c
        .ask(json!({"action": "payment.create", "payee": "vendor_77", "currency": "KZT"}))
        .await;
    assert_eq!(
        (status, &bad["field"]),
        (StatusCode::UNPROCESSABLE_ENTITY, &json!("amount_minor"))
    );
    // Over MCP: the same answers.
    let agent = c.api.mcp(&c.agent).await.expect("connect");
    let listed = agent.call("list_mandates", json!({})).await.ok();
    let ids: Vec<&str> = listed["mandates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["mandate_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [id], "only the mandates for this agent or anyone");
    assert_eq!(listed["mandates"][0]["available_minor"], json!(300_000));
    let over_mcp = agent
        .call("mandate_coverage", question("vendor_77", 100_000))
        .await
        .ok();
    assert_eq!(over_mcp, yes);
    let bad = agent
        .call(
            "mandate_coverage",
            json!({"action": "payment.create", "amount_minor": "lots"}),
        )
        .await;
    assert_eq!(
        bad.refusal(),
        ("invalid_arguments".to_owned(), json!("amount_minor"))
    );
    agent.close().await;
    drop(c.api);
    c.fleet.stop().await;
}

#[tokio::test]
async fn an_agents_token_can_neither_make_nor_widen_nor_revoke_a_mandate() {
    let c = covered().await;
    let st = statement(json!(AGENT));
    let (status, _) = c.create(&c.alice.token, &c.alice.key, &st).await;
    assert_eq!(status, StatusCode::CREATED);
    let id = st["mandate_id"].as_str().unwrap();
    // The agent signs a wider one with a key of its own making: refused by role.
    let own_key = fleetctl::key::new_key().unwrap();
    let mut wider = statement(json!(AGENT));
    wider["budget_minor"] = json!(30_000_000);
    let (status, answer) = c.create(&c.agent, &own_key, &wider).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    assert_eq!(answer["code"], json!("role_not_allowed"));
    // Nor may it send Alice's own statement again as its own, or revoke hers.
    let (status, _) = c.create(&c.agent, &c.alice.key, &st).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let response = c
        .api
        .post(
            &c.fleet.http,
            &c.agent,
            &format!("/v1/mandates/{id}/revoke"),
            &json!({}),
        )
        .await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    // Over MCP there is no tool for it, and a made-up one is a protocol error.
    let agent = c.api.mcp(&c.agent).await.expect("connect");
    let names: Vec<String> = agent
        .tools()
        .await
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(
        names.iter().all(|n| !n.contains("create_mandate")
            && !n.contains("revoke")
            && !n.contains("widen")),
        "{names:?}"
    );
    assert!(names.contains(&"mandate_coverage".to_owned()));
    let mut arguments = serde_json::Map::new();
    arguments.insert("mandate_id".to_owned(), json!(id));
    let made_up = agent
        .peer()
        .call_tool(
            rmcp::model::CallToolRequestParams::new("revoke_mandate".to_owned())
                .with_arguments(arguments),
        )
        .await;
    assert!(made_up.is_err(), "{made_up:?}");
    agent.close().await;
    let row = c
        .fleet
        .sql()
        .await
        .query_one(
            "SELECT budget_minor, revoked_at IS NULL FROM mandates WHERE mandate_id = $1",
            &[&id],
        )
        .await
        .unwrap();
    assert_eq!(
        (row.get::<_, i64>(0), row.get::<_, bool>(1)),
        (300_000, true)
    );
    drop(c.api);
    c.fleet.stop().await;
}

/// The cases both rules judge: (what varies, the operation's payload, its payee evidence,
/// who submitted it).
fn cases() -> Vec<(&'static str, Value, Value, Option<&'static str>)> {
    let payload = |amount: Value, currency: &str| json!({"invoice_id": "inv_1", "beneficiary_id": "vendor_77", "amount_minor": amount, "currency": currency});
    let found = |id: &str, fp: &str, verified: bool| {
        json!({"status": "found", "id": id, "name": "Vendor", "country": "KZ",
               "account": {"scheme": "iban", "masked": "KZ**1234", "fingerprint": fp},
               "verified": verified, "version": 1, "looked_up_at": "2026-12-01T00:00:00Z"})
    };
    let ok = found("vendor_77", FP, true);
    vec![
        (
            "covered",
            payload(json!(100), "KZT"),
            ok.clone(),
            Some(AGENT),
        ),
        (
            "at the per-operation max",
            payload(json!(150_000), "KZT"),
            ok.clone(),
            Some(AGENT),
        ),
        (
            "above it",
            payload(json!(150_001), "KZT"),
            ok.clone(),
            Some(AGENT),
        ),
        ("zero", payload(json!(0), "KZT"), ok.clone(), Some(AGENT)),
        (
            "another currency",
            payload(json!(100), "USD"),
            ok.clone(),
            Some(AGENT),
        ),
        (
            "an amount as text",
            payload(json!("100"), "KZT"),
            ok.clone(),
            Some(AGENT),
        ),
        (
            "another agent",
            payload(json!(100), "KZT"),
            ok.clone(),
            Some("support-bot"),
        ),
        ("nobody", payload(json!(100), "KZT"), ok.clone(), None),
        (
            "unverified but listed",
            payload(json!(100), "KZT"),
            found("vendor_77", FP, false),
            Some(AGENT),
        ),
        (
            "another account",
            payload(json!(100), "KZT"),
            found("vendor_77", "sha256:bb", true),
            Some(AGENT),
        ),
        (
            "another payee",
            payload(json!(100), "KZT"),
            found("vendor_99", FP, true),
            Some(AGENT),
        ),
        (
            "payee unknown",
            payload(json!(100), "KZT"),
            json!({"status": "unknown", "id": "vendor_77", "reason": "not_found", "looked_up_at": "2026-12-01T00:00:00Z"}),
            Some(AGENT),
        ),
        (
            "no payee evidence",
            payload(json!(100), "KZT"),
            Value::Null,
            Some(AGENT),
        ),
    ]
}

#[tokio::test]
async fn core_and_the_database_judge_coverage_alike() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    let statements = [statement(json!(AGENT)), statement(Value::Null), {
        let mut any = statement(json!(AGENT));
        any["payees"] = json!("any_verified");
        any
    }];
    for st in &statements {
        let mandate = Mandate::from_json(st).unwrap();
        // The row as fleet_mandate_create derives it from the statement.
        let payees = match &st["payees"] {
            Value::Array(list) => Value::Object(
                list.iter()
                    .map(|p| {
                        (
                            p["id"].as_str().unwrap().to_owned(),
                            p["account_fingerprint"].clone(),
                        )
                    })
                    .collect(),
            ),
            _ => Value::Null,
        };
        let m_row = json!({
            "mandate_id": st["mandate_id"], "tenant_id": TENANT, "actions": ["payment.create"],
            "payees": payees, "currency": "KZT", "per_operation_max_minor": 150_000,
            "budget_minor": 300_000, "count_limit": 5, "valid_from": st["valid_from"],
            "valid_until": st["valid_until"], "for_principal": st["for_principal"], "statement": st,
        });
        for (what, payload, payee, submitted_by) in cases() {
            let op = MandatedOperation {
                tenant_id: TENANT,
                action: Action::PaymentCreate,
                payload: &payload,
                payee: (!payee.is_null()).then_some(&payee),
                submitted_by,
            };
            let in_core = mandate.covers(&op);
            let o_row = json!({
                "operation_id": "op_x", "tenant_id": TENANT, "action": "payment.create",
                "payload": payload, "payee": payee, "submitted_by": submitted_by,
            });
            let in_sql: Option<bool> = sql
                .query_one(
                    "SELECT fleet_mandate_covers(jsonb_populate_record(NULL::mandates, $1),
                                                 jsonb_populate_record(NULL::operations, $2))",
                    &[&m_row, &o_row],
                )
                .await
                .unwrap()
                .get(0);
            assert_eq!(
                in_sql.unwrap_or(false),
                in_core,
                "{what}, mandate for {} paying {}",
                st["for_principal"],
                st["payees"]
            );
        }
    }
    drop(sql);
    fleet.stop().await;
}

#[tokio::test]
async fn core_and_the_database_read_the_policy_rule_for_a_mandate_alike() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    let mut verdicts = std::collections::BTreeSet::new();
    for policy in ["payments-v5", "payments-v3"] {
        let rule: Option<Value> = sql
            .query_one(
                "SELECT rules -> 'payment.create' FROM policies WHERE policy_version = $1",
                &[&policy],
            )
            .await
            .unwrap()
            .get(0);
        for (amount, currency) in [
            (100_i64, "KZT"),
            (99_999_999, "KZT"),
            (100_000_000, "KZT"),
            (100, "USD"),
            (999_999, "EUR"),
            (1_000_000, "EUR"),
            (100, "JPY"),
        ] {
            let in_core = fleet_core::mandate::coverage::policy_lets_a_mandate_approve(
                rule.as_ref(),
                amount,
                currency,
            )
            .is_ok();
            // As intake stores it: one approver asked, no risk cue (what only intake
            // judges is a condition of a "yes", never this rule's).
            let o_row = json!({
                "operation_id": "op_x", "tenant_id": TENANT, "action": "payment.create",
                "policy_version": policy, "approvals_required": 1, "risk": [],
                "payload": {"amount_minor": amount, "currency": currency},
            });
            let in_sql: bool = sql
                .query_one(
                    "SELECT fleet_mandate_may_approve(jsonb_populate_record(NULL::operations, $1))",
                    &[&o_row],
                )
                .await
                .unwrap()
                .get(0);
            assert_eq!(in_sql, in_core, "{policy}: {amount} {currency}");
            verdicts.insert(in_core);
        }
    }
    assert_eq!(verdicts.len(), 2, "both verdicts are among the cases");
    drop(sql);
    fleet.stop().await;
}
