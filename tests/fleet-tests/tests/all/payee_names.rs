//! The payee name check (Verification / Confirmation of Payee) and the headline that names
//! the payee, through the real processes: fleet-api and prepare judging intents against
//! the simulator's directory (which answers `match`, `close_match`, `no_match` and
//! `not_possible` by its documented rule), Postgres keeping the result frozen in the payee
//! evidence, and the console read in a real headless Chromium at a phone's and a desktop's
//! width.

use fleet_core::{PolicySet, Role};
use fleet_tests::{console_get, op_of, session_of, Browser, TestFleet};
use reqwest::StatusCode;
use serde_json::{json, Value};

const TENANT: &str = "org_482";

/// The seed payment to `vendor` (the simulator's seeded `Vendor <n> LLP`), giving
/// `name` for it, if any.
fn paying(vendor: &str, name: Option<&str>) -> Value {
    let mut i = fleet_tests::intent();
    i["payload"]["beneficiary_id"] = json!(vendor);
    if let Some(name) = name {
        i["payload"]["beneficiary_name"] = json!(name);
    }
    i
}

/// An `INSERT` of a copy of the operation `$1` as `id` (its key suffixed with `.suffix`)
/// whose `approvals_required` and `payee` are these SQL expressions over the copied row.
fn copy_of_operation(id: &str, suffix: &str, approvals_required: &str, payee: &str) -> String {
    format!(
        "INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash,
                                 policy_version, data_version, idempotency_key, approval_expires_at,
                                 approvals_required, payee, risk)
         SELECT '{id}', tenant_id, action, provider, payload, payload_hash,
                policy_version, data_version, idempotency_key || '.{suffix}', approval_expires_at,
                {approvals_required}, {payee}, risk
         FROM operations WHERE operation_id = $1"
    )
}

/// The account the simulator's directory holds for the Acme payees of the tests below.
const ACME_ACCOUNT: &str = "DE89 3704 0044 0532 0130 00";

/// 1,250.00 EUR to `payee` (an Acme payee the test put in the directory), giving `name`.
fn paying_acme(payee: &str, name: &str) -> Value {
    let mut i = paying(payee, Some(name));
    i["payload"]["currency"] = json!("EUR");
    i["payload"]["amount_minor"] = json!(125_000);
    i
}

/// The codes of the risk cues the operation's view carries, each with its result when it
/// has one (`payee_name_unconfirmed:no_match`).
async fn cues_of(fleet: &TestFleet, op: &str) -> Vec<String> {
    fleet.view_in_db(op).await["risk"]
        .as_array()
        .expect("a payment's view carries its risk cues")
        .iter()
        .map(|c| match c["result"].as_str() {
            Some(result) => format!("{}:{result}", c["cue"].as_str().unwrap()),
            None => c["cue"].as_str().unwrap().to_owned(),
        })
        .collect()
}

fn name_cues(cues: &[String]) -> Vec<&str> {
    cues.iter()
        .map(String::as_str)
        .filter(|c| c.starts_with("payee_name_unconfirmed"))
        .collect()
}

/// Under the shipped policy in force (payments-v3), over the API: a matching name needs
/// its amount's quorum and raises no cue; a close match is kept with the name held, raises
/// its cue and needs one more approver; a name the directory does not match is refused
/// with nothing stored; an intent without a name is checked as not possible and judged
/// as before.
#[tokio::test]
async fn the_policy_in_force_judges_each_result_of_the_name_check() {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;

    let matched = paying("vendor_77", Some("VENDOR 77  llp"));
    let view = api.submitted(&fleet.http, &agent, &matched).await;
    assert_eq!(
        view["payee"]["name_check"],
        json!({"result": "match", "asked": "VENDOR 77  llp"})
    );
    assert_eq!(view["approvals_required"], 1);
    assert_eq!(
        name_cues(&cues_of(&fleet, &op_of(&matched)).await),
        Vec::<&str>::new()
    );

    let close = paying("vendor_12", Some("Vendor 12"));
    let view = api.submitted(&fleet.http, &agent, &close).await;
    assert_eq!(
        view["payee"]["name_check"],
        json!({"result": "close_match", "asked": "Vendor 12", "held": "Vendor 12 LLP"})
    );
    assert_eq!(view["approvals_required"], 2, "one approver more");
    assert_eq!(
        name_cues(&cues_of(&fleet, &op_of(&close)).await),
        ["payee_name_unconfirmed:close_match"]
    );

    let wrong = paying("vendor_3", Some("Mallory Holdings Ltd"));
    let refused = api.submit(&fleet.http, &agent, &wrong).await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let problem: Value = refused.json().await.unwrap();
    assert_eq!(
        (&problem["code"], &problem["field"]),
        (
            &json!("payee_name_unconfirmed"),
            &json!("payload.beneficiary_name")
        )
    );
    assert!(fleet
        .store
        .get(fleet_tests::at(&op_of(&wrong)))
        .await
        .unwrap()
        .is_none());

    let unnamed = paying("vendor_5", None);
    let view = api.submitted(&fleet.http, &agent, &unnamed).await;
    assert_eq!(
        view["payee"]["name_check"],
        json!({"result": "not_possible", "asked": null, "why": "no_name"})
    );
    assert_eq!(view["approvals_required"], 1);
    assert_eq!(
        name_cues(&cues_of(&fleet, &op_of(&unnamed)).await),
        Vec::<&str>::new()
    );
    fleet.stop().await;
}

/// Under a policy whose name_check table asks one more approver for `no_match` (and has
/// no risk table, so the cue alone adds nothing), through prepare from the queue: a name
/// that does not match adds the cue and the approver; a matching one adds neither. The
/// database refuses a row that asks fewer than the table does.
#[tokio::test]
async fn no_match_adds_the_cue_and_the_extra_approver_and_match_adds_none() {
    let mut fleet = TestFleet::start().await;
    let lenient = "policy_version = \"payments-names-v1\"\n\
                   [actions.\"payment.create\"]\napprovers = 1\n\
                   [actions.\"payment.create\".name_check]\n\
                   no_match = \"extra_approver\"\n";
    let policies = PolicySet::parse([("payments-names-v1", lenient)]).unwrap();
    fleet.load_policies(&policies).await;
    fleet
        .assign_policy(Some(TENANT), "payment.create", "payments-names-v1")
        .await;
    fleet.spawn_prepare_judging(fleet.provider_configs().capabilities(), policies);
    let under_it = |mut i: Value| {
        i["policy_version"] = json!("payments-names-v1");
        i
    };

    let matched = under_it(paying("vendor_77", Some("Vendor 77 LLP")));
    let m = fleet.submitted(&matched).await;
    let wrong = under_it(paying("vendor_77", Some("Mallory Holdings Ltd")));
    let w = fleet.submitted(&wrong).await;

    let (m_view, w_view) = (fleet.view_in_db(&m).await, fleet.view_in_db(&w).await);
    assert_eq!(m_view["payee"]["name_check"]["result"], "match");
    assert_eq!(w_view["payee"]["name_check"]["result"], "no_match");
    assert_eq!(
        (&m_view["approvals_required"], &w_view["approvals_required"]),
        (&json!(1), &json!(2)),
        "no_match: one approver more; match: none"
    );
    assert_eq!(name_cues(&cues_of(&fleet, &m).await), Vec::<&str>::new());
    assert_eq!(
        name_cues(&cues_of(&fleet, &w).await),
        ["payee_name_unconfirmed:no_match"]
    );

    // The database keeps the table itself: the same row asking one approver is refused,
    // whoever inserts it (here the tables' owner).
    let sql = fleet.sql().await;
    let copied = sql
        .execute(
            &copy_of_operation("op_01JZZZZZZZZZZZZZZZZZZZZZZZ", "copy", "1", "payee"),
            &[&w],
        )
        .await;
    let refused = copied.expect_err("fewer approvers than the name check asks");
    assert_eq!(
        refused.as_db_error().and_then(|e| e.constraint()),
        Some("operations_name_check_of_policy"),
        "{refused}"
    );
    // Nor can a check of another name than the snapshot gives be kept.
    let others_check = "jsonb_set(payee, '{name_check}', \
        (SELECT payee -> 'name_check' FROM operations WHERE operation_id = $2))";
    let forged = sql
        .execute(
            &copy_of_operation(
                "op_01JZZZZZZZZZZZZZZZZZZZZZZY",
                "forged",
                "approvals_required",
                others_check,
            ),
            &[&w, &m],
        )
        .await
        .expect_err("a match kept for a name that does not match");
    assert_eq!(
        forged.as_db_error().and_then(|e| e.constraint()),
        Some("operations_payee_name_check"),
        "{forged}"
    );
    fleet.stop().await;
}

/// The result is frozen at intake: the directory renaming the account holder afterwards
/// changes neither the kept check nor what the approval page says, and no role may
/// rewrite it.
#[tokio::test]
async fn the_name_check_is_frozen_when_the_directory_changes() {
    let fleet = TestFleet::start().await;
    let (_issuer, api, agent) = fleet.console_for(&[("alice", Role::Approver)]).await;
    fleet
        .sim_payee("acme_1", "Acme Supplies Ltd", ACME_ACCOUNT)
        .await;
    let i = paying_acme("acme_1", "Acme Supplies");
    let op = op_of(&i);
    let view = api.submitted(&fleet.http, &agent, &i).await;
    let kept = view["payee"]["name_check"].clone();
    assert_eq!(kept["result"], "close_match");
    assert_eq!(kept["held"], "Acme Supplies Ltd");

    // The directory now holds the account under the name the intent gave: a new lookup
    // would match. What was kept, and shown, stays the close match.
    let now = fleet
        .sim_payee("acme_1", "Acme Supplies", ACME_ACCOUNT)
        .await;
    assert_eq!(now["version"], 2);
    let answered = fleet
        .payments_client(5_000)
        .get_beneficiary("acme_1", Some("Acme Supplies"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answered["name_check"]["result"], "match");
    assert_eq!(fleet.view_in_db(&op).await["payee"]["name_check"], kept);

    let alice = session_of(&api, "sub-alice").await;
    let page = console_get(
        &api,
        &alice,
        &format!("/console/operations/{op}?tenant={TENANT}"),
    )
    .await
    .text()
    .await
    .unwrap();
    let check = page
        .split("id=\"name-check\">")
        .nth(1)
        .and_then(|rest| rest.split("</dd>").next())
        .expect("the name check beside the payee");
    assert!(
        check.contains("Close match: the account is held by &quot;Acme Supplies Ltd&quot;")
            || check.contains("Close match: the account is held by &#34;Acme Supplies Ltd&#34;"),
        "{check}"
    );
    assert!(
        page.contains("the payee&#39;s name is only a close match")
            || page.contains("the payee's name is only a close match"),
        "the cue is shown"
    );

    let sql = fleet.sql().await;
    let rewritten = sql
        .execute(
            "UPDATE operations SET payee = jsonb_set(payee, '{name_check,result}', '\"match\"')
             WHERE operation_id = $1",
            &[&op],
        )
        .await;
    assert!(rewritten.is_err(), "the kept check is immutable");
    assert_eq!(fleet.view_in_db(&op).await["payee"]["name_check"], kept);
    fleet.stop().await;
}

/// What a person's browser shows of the approval page's headline: (its sentence, its own
/// first text node; the whole headline's text; the payee name's element's text; the line
/// below it; whether the name lies within the window's width).
async fn headline_seen(browser: &Browser) -> (String, String, String, String, bool) {
    let script = "const h = document.querySelector('h1.headline');
        const name = h.querySelector('q.payee-named');
        const under = document.querySelector('#headline-payee');
        const box = name.getBoundingClientRect();
        return [h.firstChild.nodeValue, h.innerText, name.innerText, under.innerText,
                box.left >= 0 && box.right <= window.innerWidth && box.width > 0];";
    let seen = browser
        .client
        .execute(script, vec![])
        .await
        .expect("read the headline");
    let text = |i: usize| seen[i].as_str().unwrap_or_default().to_owned();
    (
        text(0),
        text(1),
        text(2),
        text(3),
        seen[4].as_bool() == Some(true),
    )
}

/// The approval page's headline names the payee as the directory holds the name ("Pay
/// 1,250.00 EUR to Acme Supplies Ltd"), the id and masked account below it, at 360 and
/// 1280 px; a name that tries to say another amount stays in its own element, after the
/// real amount. The statement the approver signs names the payee the same way.
#[tokio::test]
async fn the_headline_names_the_payee_at_a_phones_and_a_desktops_width() {
    let fleet = TestFleet::start().await;
    let (_issuer, api, agent) = fleet.console_for(&[("alice", Role::Approver)]).await;
    fleet
        .sim_payee("acme_1", "Acme Supplies Ltd", ACME_ACCOUNT)
        .await;
    let lying = "Acme Supplies Ltd\" 1.00 EUR to \"Bob";
    fleet.sim_payee("acme_2", lying, ACME_ACCOUNT).await;
    let pay = |payee: &str, name: &str, invoice: &str| {
        let mut i = paying_acme(payee, name);
        i["payload"]["invoice_id"] = json!(invoice);
        i
    };
    let honest = pay("acme_1", "Acme Supplies Ltd", "inv_501");
    api.submitted(&fleet.http, &agent, &honest).await;
    let tricky = pay("acme_2", lying, "inv_502");
    api.submitted(&fleet.http, &agent, &tricky).await;

    let browser = Browser::start().await;
    browser.sign_in(&api.base_url, "sub-alice").await;
    for width in [360, 1280] {
        browser.viewport(width, 900).await;
        for (i, name) in [(&honest, "Acme Supplies Ltd"), (&tricky, lying)] {
            let op = op_of(i);
            browser
                .goto(&api.url(&format!("/console/operations/{op}?tenant={TENANT}")))
                .await;
            browser.find("h1.headline q.payee-named").await;
            let (said, whole, shown, under, within) = headline_seen(&browser).await;
            assert_eq!(said.trim(), "Pay 1,250.00 EUR to", "at {width} px");
            assert_eq!(shown, name, "the name in its own element at {width} px");
            assert!(
                whole.starts_with("Pay 1,250.00 EUR to") && whole.contains(name),
                "at {width} px: {whole}"
            );
            assert!(within, "the name lies within the window at {width} px");
            let id = i["payload"]["beneficiary_id"].as_str().unwrap();
            let invoice = i["payload"]["invoice_id"].as_str().unwrap();
            assert_eq!(
                under,
                format!("{id}, account DE•• •••• •••• 3000, for invoice {invoice}"),
                "at {width} px"
            );
            assert!(
                browser
                    .text("#name-check")
                    .await
                    .contains("The name matches the account holder"),
                "at {width} px"
            );
            assert!(
                !browser.scrolls_sideways().await,
                "the page scrolls sideways at {width} px"
            );
            browser
                .screenshot(&format!("console-payee-headline-{id}-{width}.png"))
                .await;
        }
    }
    browser.close().await;

    // The statement an approver signs names the payee the same way, the name quoted.
    let row = fleet.row(&op_of(&tricky)).await;
    let statement = fleet_core::approval_statement::ApprovalStatement::derive(
        &row.statement_subject(),
        chrono::Utc::now() + chrono::Duration::minutes(30),
    );
    assert_eq!(
        statement.summary,
        "Pay 1,250.00 EUR to \"Acme Supplies Ltd\\\" 1.00 EUR to \\\"Bob\" (acme_2, account DE•• •••• •••• 3000, for invoice inv_502) — free text: beneficiary_name \"Acme Supplies Ltd\\\" 1.00 EUR to \\\"Bob\""
    );
    assert_eq!(statement.payee_name_check.as_deref(), Some("match"));
    fleet.stop().await;
}
