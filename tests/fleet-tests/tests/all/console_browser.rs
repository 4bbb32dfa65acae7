//! The console in a real browser (headless Chromium): people sign in through the test
//! OpenID Connect issuer, read what waits for them in words, and decide with the forms
//! the pages show. fleet-api runs as a real process; execute and reconcile in-process.
//! With `CONSOLE_SCREENSHOTS_DIR=docs/img`, the first test writes the README's pictures.

use fleet_core::{ApprovalStatus, Role, Status};
use fleet_tests::{
    contract, fast_reconcile, hash_of, intent, mark_approved, op_of, signed_approval, ApiProcess,
    Browser, Signer, TestFleet,
};
use serde_json::{json, Value};

const TENANT: &str = "org_482";

/// A payment of `amount_minor` `currency` to `vendor`, approvable for `ttl_s` seconds.
fn payment(vendor: &str, invoice: &str, amount_minor: i64, currency: &str, ttl_s: i64) -> Value {
    let mut i = intent();
    i["payload"] = json!({"invoice_id": invoice, "beneficiary_id": vendor, "amount_minor": amount_minor, "currency": currency});
    i["data_version"] = json!(format!("{invoice}@1"));
    i["approval_ttl_seconds"] = json!(ttl_s);
    i
}

/// Posts a form the page does not offer, from inside the signed-in page (what a person
/// editing the page, or a stale copy of it, would send): the session's form token is read
/// from the page, so only the decision itself can refuse it.
async fn post_from_page(browser: &Browser, action: &str, fields: Value) {
    let script = "const f = document.createElement('form'); f.method = 'post'; f.action = arguments[0];
        const fields = Object.assign({form_token: document.querySelector('input[name=form_token]').value}, arguments[1]);
        for (const [k, v] of Object.entries(fields)) { const i = document.createElement('input'); i.type = 'hidden'; i.name = k; i.value = v; f.appendChild(i); }
        document.body.appendChild(f); f.submit();";
    browser
        .execute_through(script, vec![json!(action), fields])
        .await;
}

async fn db_status(fleet: &TestFleet, op: &str) -> (Status, ApprovalStatus) {
    let row = fleet.row(op).await;
    (row.status, row.approval_status)
}

/// The console's page of the operation `op`.
async fn open_operation(browser: &Browser, api: &ApiProcess, op: &str) {
    browser
        .goto(&api.url(&format!("/console/operations/{op}")))
        .await;
}

/// Posts an approval of `i`'s snapshot from inside the page, whether or not it offers one.
async fn approve_from_page(browser: &Browser, i: &Value) {
    let action = format!("/console/operations/{}/approve", op_of(i));
    post_from_page(browser, &action, json!({"payload_hash": hash_of(i)})).await;
}

#[tokio::test]
async fn an_approver_signs_in_approves_a_payment_from_the_inbox_and_watches_it_succeed() {
    let mut fleet = TestFleet::start().await;
    fleet.spawn_execute();
    // The console's approval rings no doorbell yet; reconcile's sweeper rings approved rows.
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    let (_issuer, api, agent) = fleet.console_for(&[("alice", Role::Approver)]).await;
    let seed = intent();
    let op = op_of(&seed);
    api.submitted(&fleet.http, &agent, &seed).await;
    // Two more waiting, one expiring sooner, so the inbox has an order to show.
    api.submitted(
        &fleet.http,
        &agent,
        &payment("vendor_12", "inv_3310", 1_250_000, "JPY", 7200),
    )
    .await;
    api.submitted(
        &fleet.http,
        &agent,
        &payment("vendor_3", "inv_77", 4_250, "KWD", 900),
    )
    .await;

    let browser = Browser::start().await;
    browser.sign_in(&api.base_url, "sub-alice").await;
    assert_eq!(browser.path().await, "/console");
    let inbox = browser.page_text().await;
    // Each headline names the payee as the directory holds the name; its id, masked
    // account and invoice below it.
    let seed_words = "Pay 12,500.00 KZT to Vendor 77 LLP";
    for words in [
        "Pay 4.250 KWD to Vendor 3 LLP",
        "Pay 1,250,000 JPY to Vendor 12 LLP",
        seed_words,
        "for invoice inv_9182",
        "vendor_3, account KZ",
    ] {
        assert!(inbox.contains(words), "the inbox says {words:?}: {inbox}");
    }
    let soonest = inbox.find("4.250 KWD").unwrap();
    assert!(
        soonest < inbox.find("12,500.00 KZT").unwrap()
            && inbox.find("12,500.00 KZT").unwrap() < inbox.find("1,250,000 JPY").unwrap(),
        "soonest expiry first: {inbox}"
    );
    assert!(
        inbox.contains("expires in 59 min") || inbox.contains("expires in 1 h"),
        "{inbox}"
    );
    browser.screenshot("console-inbox.png").await;

    browser
        .click_through(&format!(
            "a[href=\"/console/operations/{op}?tenant={TENANT}\"]"
        ))
        .await;
    let page = browser.page_text().await;
    for fact in [
        seed_words,
        TENANT,
        "payments-v3",
        "inv_9182@7",
        "Invoice is due today and matches PO 5531.",
        "billing-bot",
    ] {
        assert!(
            page.contains(fact),
            "the approval page shows {fact:?}: {page}"
        );
    }
    let hash = hash_of(&seed);
    assert!(
        browser.client.source().await.unwrap().contains(&hash),
        "the page carries the hash it approves"
    );
    // The exact snapshot and its hash, on demand.
    browser.click("details summary").await;
    assert!(browser
        .text("pre.canonical")
        .await
        .contains("\"amount_minor\":1250000"));
    browser.screenshot("console-approval.png").await;

    browser.click_through("#approve").await;
    browser
        .text_with(".banner.ok", "You approved this snapshot.")
        .await;
    browser.reload_until_shows("succeeded").await;
    let done = browser.page_text().await;
    assert!(done.contains("alice"), "decided by alice: {done}");
    assert!(
        done.contains("in progress → succeeded") && done.contains("Succeeded"),
        "the timeline shows the outcome: {done}"
    );
    // Tall enough for the attempts, the lookups and the timeline.
    browser.client.set_window_size(1280, 1500).await.unwrap();
    browser.screenshot("console-operation.png").await;

    let row = fleet.row(&op).await;
    assert_eq!(
        (
            row.status,
            row.decided_by.as_deref(),
            row.approved_hash.as_deref()
        ),
        (Status::Succeeded, Some("alice"), Some(hash.as_str()))
    );
    assert_eq!(fleet.sim_effects(&op).await, 1);
    browser.close().await;
    fleet.stop().await;
}

#[tokio::test]
async fn the_agents_own_principal_and_the_submitter_are_refused() {
    let fleet = TestFleet::start().await;
    let (_issuer, api, agent) = fleet.console_for(&[("alice", Role::Approver)]).await;
    // The agent's principal can also sign in as a person.
    fleet
        .person("billing-bot", Role::Agent, &[TENANT], "sub-agent")
        .await;
    let by_agent = intent();
    api.submitted(&fleet.http, &agent, &by_agent).await;
    // An operation alice submitted herself (through an intake that recorded her).
    let by_alice = intent();
    let valid = fleet_core::parse_intent(&serde_json::to_vec(&by_alice).unwrap()).unwrap();
    fleet
        .store
        .insert_prepared(&valid, 1, Some("alice"))
        .await
        .unwrap();

    let browser = Browser::start().await;
    browser.sign_in(&api.base_url, "sub-agent").await;
    let op = op_of(&by_agent);
    open_operation(&browser, &api, &op).await;
    browser
        .text_with("#cannot-approve", "Your role (agent) does not approve")
        .await;
    assert!(
        browser
            .client
            .find(fantoccini::Locator::Css("#approve"))
            .await
            .is_err(),
        "no approve button for the agent"
    );
    approve_from_page(&browser, &by_agent).await;
    browser
        .text_with(".banner.refused", "your role may not take this decision")
        .await;
    fleet.still_pending(&op).await;
    browser.close().await;

    let browser = Browser::start().await;
    browser.sign_in(&api.base_url, "sub-alice").await;
    let mine = op_of(&by_alice);
    open_operation(&browser, &api, &mine).await;
    browser
        .text_with("#cannot-approve", "You submitted this operation")
        .await;
    approve_from_page(&browser, &by_alice).await;
    browser
        .text_with(
            ".banner.refused",
            "you submitted this operation: another person must approve it",
        )
        .await;
    fleet.still_pending(&mine).await;
    browser.close().await;
    fleet.stop().await;
}

/// The harness's promise the tests above lean on: a form whose submission begins well after
/// the click (as it can on a busy machine) is waited for, so what is read next is the page
/// the form led to, never the page being left.
#[tokio::test]
async fn click_through_waits_for_a_form_that_submits_after_the_click_has_returned() {
    let fleet = TestFleet::start().await;
    let (_issuer, api, agent) = fleet.console_for(&[("alice", Role::Approver)]).await;
    let i = intent();
    api.submitted(&fleet.http, &agent, &i).await;
    let browser = Browser::start().await;
    browser.sign_in(&api.base_url, "sub-alice").await;
    open_operation(&browser, &api, &op_of(&i)).await;
    browser
        .client
        .execute(
            "document.querySelector('#approve').addEventListener('click', e => {
                 e.preventDefault();
                 setTimeout(() => e.target.form.submit(), 1500);
             });",
            vec![],
        )
        .await
        .unwrap();
    browser.click_through("#approve").await;
    // No wait: the banner is on the page the moment click_through returns.
    let banner = browser
        .client
        .find(fantoccini::Locator::Css(".banner.ok"))
        .await
        .expect("the next page, not the one left");
    assert!(banner
        .text()
        .await
        .unwrap()
        .contains("You approved this snapshot."));
    browser.close().await;
    fleet.stop().await;
}

#[tokio::test]
async fn a_page_showing_a_snapshot_that_is_no_longer_pending_cannot_approve() {
    let fleet = TestFleet::start().await;
    let (_issuer, api, agent) = fleet.console_for(&[("alice", Role::Approver)]).await;
    let first = intent();
    let a = op_of(&first);
    api.submitted(&fleet.http, &agent, &first).await;

    let browser = Browser::start().await;
    browser.sign_in(&api.base_url, "sub-alice").await;
    open_operation(&browser, &api, &a).await;
    assert!(browser.page_text().await.contains("Pay 12,500.00 KZT"));
    // While the page is open, the agent corrects the amount: a new operation replaces it.
    let mut corrected = intent();
    corrected["payload"]["amount_minor"] = json!(1_350_000);
    corrected["supersedes"] = json!(a);
    let b = op_of(&corrected);
    api.submitted(&fleet.http, &agent, &corrected).await;
    browser.click_through("#approve").await;
    browser
        .text_with(".banner.refused", "no longer waiting for a decision")
        .await;
    assert_eq!(
        db_status(&fleet, &a).await,
        (Status::Cancelled, ApprovalStatus::Pending)
    );
    fleet.still_pending(&b).await;

    // The new page, with its approval form bound to another snapshot's hash (a page from
    // before the correction), approves nothing either.
    open_operation(&browser, &api, &b).await;
    assert!(browser.page_text().await.contains("Pay 13,500.00 KZT"));
    browser
        .client
        .execute(
            "document.querySelector('input[name=payload_hash]').value = arguments[0];",
            vec![json!(hash_of(&first))],
        )
        .await
        .unwrap();
    browser.click_through("#approve").await;
    browser
        .text_with(".banner.refused", "does not show the stored snapshot")
        .await;
    fleet.still_pending(&b).await;
    browser.close().await;
    fleet.stop().await;
}

#[tokio::test]
async fn an_operator_resolves_an_escalated_operation_from_the_queue() {
    let mut fleet = TestFleet::start().await;
    fleet.spawn_execute();
    let (_issuer, api, agent) = fleet.console_for(&[("dana", Role::Operator)]).await;
    let i = intent();
    let op = op_of(&i);
    api.submitted(&fleet.http, &agent, &i).await;
    // The provider commits the payment but answers 500: the outcome is unknown.
    fleet
        .sim_fault(
            json!({"route": "POST /v1/payments", "kind": "error_after_commit", "status": 500}),
        )
        .await;
    fleet.approve(&op, &hash_of(&i)).await.unwrap();
    let row = fleet.reaches(&op, Status::Unknown).await;
    fleet
        .escalate(&op, &row, fleet_core::Reason::VersionMoved)
        .await;

    let browser = Browser::start().await;
    browser.sign_in(&api.base_url, "sub-dana").await;
    browser.click_through("a[href=\"/console/queue\"]").await;
    let queue = browser.page_text().await;
    assert!(
        queue.contains("Pay 12,500.00 KZT to Vendor 77 LLP")
            && queue.contains("escalated")
            && queue.contains("version_moved"),
        "{queue}"
    );
    browser
        .click_through(&format!(
            "a[href=\"/console/operations/{op}?tenant={TENANT}\"]"
        ))
        .await;
    let page = browser.page_text().await;
    assert!(
        page.contains("unknown") && page.contains("500"),
        "the attempt and the provider's answer: {page}"
    );
    browser
        .type_into("#external_id", "pay_checked_by_hand")
        .await;
    browser
        .type_into("#evidence", "seen in the provider's dashboard")
        .await;
    browser.click_through("#resolve").await;
    browser
        .text_with(".banner.ok", "You resolved this operation.")
        .await;
    assert!(browser.page_text().await.contains("operator:dana"));

    let last = fleet
        .resolved_succeeded(&op, "pay_checked_by_hand", "operator:dana")
        .await;
    assert_eq!(
        last.evidence.unwrap()["evidence"],
        json!("seen in the provider's dashboard")
    );
    browser.close().await;
    fleet.stop().await;
}

/// `i` approved over the API by `signer`, signed with their key.
async fn approve_over_api(fleet: &TestFleet, api: &ApiProcess, signer: &Signer, i: &Value) {
    let path = format!("/v1/operations/{}/approve", op_of(i));
    let expires_at = chrono::Utc::now() + chrono::Duration::hours(1);
    let signed = signed_approval(i, &signer.key, expires_at);
    let approved = api.post(&fleet.http, &signer.token, &path, &signed).await;
    assert_eq!(approved.status(), reqwest::StatusCode::OK, "{path}");
}

/// A 1,500,000.00 KZT payment: payments-v3 asks for two signed approvals.
fn large_payment(invoice: &str) -> Value {
    payment("vendor_77", invoice, 150_000_000, "KZT", 3600)
}

#[tokio::test]
async fn an_approver_signs_a_large_payment_with_a_passkey_and_execute_verifies_it_before_paying() {
    let mut fleet = TestFleet::start().await;
    fleet.spawn_execute();
    fleet.spawn_reconcile(contract(300), fast_reconcile());
    let issuer = fleet.spawn_issuer().await;
    let (api, console_url) = fleet.spawn_console_on_localhost(&issuer).await;
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    fleet
        .person("alice", Role::Approver, &[TENANT], "sub-alice")
        .await;
    let bob = fleet.signer("bob").await;

    // Alice creates a passkey in the console: her authenticator holds it, the console
    // files it for an administrator and shows her its key id.
    let browser = Browser::start().await;
    let authenticator = browser.add_virtual_authenticator().await;
    browser.sign_in(&console_url, "sub-alice").await;
    let key_id = browser.create_passkey().await;
    assert!(key_id.starts_with("passkey:"), "{key_id}");
    assert!(browser
        .page_text()
        .await
        .contains("waiting for an administrator"));
    assert_eq!(
        browser
            .authenticator_credentials(&authenticator)
            .await
            .len(),
        1,
        "the private key is the authenticator's"
    );
    browser.screenshot("console-passkeys.png").await;

    // Until an administrator accepts it, it signs nothing: the page asks for a
    // registered key and offers no unsigned approval.
    let first = large_payment("inv_9300");
    let op = op_of(&first);
    api.submitted(&fleet.http, &agent, &first).await;
    browser
        .goto(&format!("{console_url}/console/operations/{op}"))
        .await;
    browser.find("#needs-signature").await;
    let page = browser.client.source().await.unwrap();
    assert!(
        !page.contains("id=\"approve-passkey\"") && !page.contains("id=\"approve\""),
        "no approval is offered before the passkey is registered"
    );

    fleet.accept_key(&key_id).await;
    let listed = fleet.fleetctl_with(&[], &["key", "list"]).await;
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed
            .lines()
            .any(|l| l.contains(&key_id) && l.contains("alice") && l.contains("test-admin")),
        "{listed}"
    );

    // Now the page offers the passkey, with the words it signs; one touch approves.
    browser.client.refresh().await.unwrap();
    let statement = browser.text("#statement").await;
    for fact in [
        "Pay 1,500,000.00 KZT to \"Vendor 77 LLP\" (vendor_77, account KZ",
        "for invoice inv_9300)",
        &format!("operation {op} (tenant {TENANT})"),
        &hash_of(&first),
        "valid until",
    ] {
        assert!(
            statement.contains(fact),
            "the statement says {fact:?}: {statement}"
        );
    }
    browser.screenshot("console-approve-with-passkey.png").await;
    browser.click_through("#approve-passkey").await;
    browser.reload_until_shows("1 of 2").await;
    let sql = fleet.sql().await;
    let (signer, length): (String, i32) = {
        let r = sql
            .query_one(
                "SELECT key_id, octet_length(signature) FROM approvals WHERE operation_id = $1 AND principal = 'alice'",
                &[&op],
            )
            .await
            .unwrap();
        (r.get(0), r.get(1))
    };
    assert_eq!(signer, key_id);
    assert!(
        length > 64,
        "a passkey's assertion, not an Ed25519 signature"
    );
    assert_eq!(db_status(&fleet, &op).await.1, ApprovalStatus::Pending);

    // Bob signs with his local key; execute verifies both signatures, then pays once.
    approve_over_api(&fleet, &api, &bob, &first).await;
    fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(fleet.sim_effects(&op).await, 1, "paid once");

    // Alice's assertion replayed onto another payment (by whoever can write approvals
    // rows, here the API's own database role) signs nothing there: execute refuses it.
    let second = large_payment("inv_9301");
    let replayed = op_of(&second);
    api.submitted(&fleet.http, &agent, &second).await;
    approve_over_api(&fleet, &api, &bob, &second).await;
    let api_role = fleet.sql_as_api_role().await;
    api_role
        .execute(
            "INSERT INTO approvals (operation_id, principal, signed_in_with, payload_hash, key_id, signature, signed_expires_at)
             SELECT $1, a.principal, a.signed_in_with, o.payload_hash, a.key_id, a.signature, a.signed_expires_at
             FROM approvals a, operations o WHERE a.operation_id = $2 AND a.principal = 'alice' AND o.operation_id = $1",
            &[&replayed, &op],
        )
        .await
        .unwrap();
    mark_approved(&api_role, &replayed, "alice").await.unwrap();
    fleet.ring_execute(&replayed).await;
    fleet
        .escalated_as(&replayed, Status::Unknown, "approval_signature_invalid")
        .await;
    assert_eq!(fleet.sim_effects(&replayed).await, 0, "nothing was paid");

    browser.close().await;
    drop(api);
    fleet.stop().await;
}

#[tokio::test]
async fn the_approval_page_fits_a_phone_says_who_approved_and_asks_to_retype_a_large_amount() {
    let fleet = TestFleet::start().await;
    let issuer = fleet.spawn_issuer().await;
    let api = fleet.spawn_console(&issuer).await;
    for (name, subject) in [("alice", "sub-alice"), ("bob", "sub-bob")] {
        fleet.person(name, Role::Approver, &[TENANT], subject).await;
    }
    // 12,500.00 KZT that needs two approvers: above the policy's threshold.
    let i = intent();
    let op = fleet.stored_with_quorum(&i, 2, Some("billing-bot")).await;

    let browser = Browser::start().await;
    browser.sign_in(&api.base_url, "sub-alice").await;
    let page = api.url(&format!("/console/operations/{op}"));
    for (width, name) in [
        (1280, "console-approval-1280.png"),
        (360, "console-approval-360.png"),
    ] {
        browser.viewport(width, 900).await;
        browser.goto(&page).await;
        browser.find("#approvals-so-far").await;
        assert!(
            !browser.scrolls_sideways().await,
            "the approval page scrolls sideways at {width} px"
        );
        browser.screenshot(name).await;
        browser.goto(&api.url("/console")).await;
        assert!(
            !browser.scrolls_sideways().await,
            "the inbox scrolls sideways at {width} px"
        );
    }
    browser.screenshot("console-inbox-360.png").await;
    browser.viewport(1280, 1000).await;
    browser.goto(&page).await;

    // Statuses in words, the deadline as a time and a date, nobody approved yet.
    let text = browser.page_text().await;
    assert!(text.contains("Waiting for approval"), "{text}");
    assert!(!text.contains("not_started"), "{text}");
    let deadline = browser.text("#deadline").await;
    assert!(
        deadline.starts_with("expires in") && deadline.contains(" UTC on "),
        "{deadline}"
    );
    browser
        .text_with("#approvals-so-far", "Nobody has approved yet")
        .await;
    // A skip link leads past the navigation; every table has a caption.
    assert_eq!(
        browser
            .find("a.skip")
            .await
            .attr("href")
            .await
            .unwrap()
            .as_deref(),
        Some("#main")
    );

    // One click is not enough: the amount must be re-typed, and exactly.
    approve_from_page(&browser, &i).await;
    browser
        .text_with(".banner.refused", "type the amount exactly")
        .await;
    browser.type_into("#confirm_amount", "12,500.01").await;
    browser.click_through("#approve").await;
    browser
        .text_with(".banner.refused", "type the amount exactly")
        .await;
    fleet.still_pending(&op).await;
    browser.type_into("#confirm_amount", "12,500.00 KZT").await;
    browser.click_through("#approve").await;
    browser.reload_until_shows("1 of 2 approvals").await;
    let so_far = browser.text("#approvals-so-far").await;
    assert!(
        so_far.contains("alice approved at") && so_far.contains("in the console"),
        "{so_far}"
    );
    browser.close().await;
    fleet.stop().await;
}
