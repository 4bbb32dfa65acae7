//! Standing mandates and batch approval in the console, in a real browser (headless
//! Chromium with a virtual WebAuthn authenticator), fleet-api as a real process: an
//! approver composes a mandate, reads it in words before anything is signed, signs it with
//! a passkey, and the mandate then approves a covered payment that is paid; on a phone's
//! width an approver ticks 3 of 5 pending payments, reads the count, the totals and the
//! payees, signs once, and exactly those 3 are approved.

use fleet_core::{ApprovalStatus, Role, Status};
use fleet_tests::{intent, op_of, Browser, TestFleet};
use serde_json::{json, Value};

const TENANT: &str = "org_482";
const AGENT: &str = "billing-bot";

/// Alice signs in with a browser holding a virtual authenticator, creates a passkey, and
/// an administrator registers it.
async fn alice_with_a_passkey(fleet: &TestFleet, console_url: &str) -> Browser {
    fleet
        .person("alice", Role::Approver, &[TENANT], "sub-alice")
        .await;
    let browser = Browser::start().await;
    browser.add_virtual_authenticator().await;
    browser.sign_in(console_url, "sub-alice").await;
    let key_id = browser.create_passkey().await;
    fleet.accept_key(&key_id).await;
    browser
}

/// A payment of `amount_minor` KZT to `vendor` for its own invoice.
fn payment(vendor: &str, amount_minor: i64, policy: Option<&str>) -> Value {
    let mut i = intent();
    if let Some(p) = policy {
        i["policy_version"] = json!(p);
    }
    i["payload"]["beneficiary_id"] = json!(vendor);
    i["payload"]["amount_minor"] = json!(amount_minor);
    i["payload"]["invoice_id"] = json!(format!("inv_c{amount_minor}"));
    i["data_version"] = json!(format!("inv_c{amount_minor}@1"));
    i
}

#[tokio::test]
async fn a_mandate_signed_with_a_passkey_is_read_in_words_first_then_pays_a_covered_payment() {
    let mut fleet = TestFleet::with_mandates().await;
    fleet.spawn_execute();
    let issuer = fleet.spawn_issuer().await;
    let (api, console_url) = fleet.spawn_console_on_localhost(&issuer).await;
    let agent = fleet.token(AGENT, Role::Agent, &[TENANT]).await;
    let bob = fleet.token("bob", Role::Approver, &[TENANT]).await;
    // vendor_77 paid once before, approved by Bob: the payee and its account are known,
    // so a later payment to it carries no risk cue a mandate would stop at.
    let seed = payment("vendor_77", 10_000, Some("payments-v5"));
    let fingerprint = fleet.paid_before(&api, &agent, &bob, &seed).await;
    // A covered payment waits for a person.
    let covered = payment("vendor_77", 10_001, Some("payments-v5"));
    let op = op_of(&covered);
    let view = api.submitted(&fleet.http, &agent, &covered).await;
    assert_eq!(view["risk"], json!([]), "{view}");
    fleet.still_pending(&op).await;

    let browser = alice_with_a_passkey(&fleet, &console_url).await;
    browser.viewport(360, 800).await;
    browser.click_through("a[href=\"/console/mandates\"]").await;
    browser
        .text_with(".empty", "Your tenants have no mandate")
        .await;
    browser.click_through("#new-mandate").await;
    // vendor_77 is offered with the account its operations named: ticked, not typed.
    browser
        .click(&format!(
            "input[name=payee][value=\"vendor_77={fingerprint}\"]"
        ))
        .await;
    browser.type_into("#currency", "KZT").await;
    browser.type_into("#per_operation_max", "500.00").await;
    browser.type_into("#budget", "1,000.00").await;
    browser.type_into("#count_limit", "5").await;
    browser.type_into("#for_principal", AGENT).await;
    assert!(
        !browser.scrolls_sideways().await,
        "the form scrolls sideways at 360 px"
    );
    browser.screenshot("console-mandate-form-360.png").await;
    browser.click_through("#review-mandate").await;

    // The words first: what core writes for the statement, and nothing stored yet.
    let words = browser.text("#mandate-words").await;
    for fact in [
        &format!("for tenant \"{TENANT}\""),
        "approves: payment.create",
        &format!("\"vendor_77\" (account {fingerprint})"),
        "each at most 500.00 KZT, in all at most 1,000.00 KZT, at most 5 operations",
        &format!("intents of: \"{AGENT}\""),
        "hash: sha256:",
    ] {
        assert!(words.contains(fact), "the words say {fact:?}: {words}");
    }
    assert_eq!(fleet.count("SELECT count(*) FROM mandates").await, 0);
    assert!(!browser.scrolls_sideways().await, "the words fit 360 px");
    browser.screenshot("console-mandate-sign-360.png").await;
    browser.click_through("#sign-mandate").await;
    browser
        .text_with(".banner.ok", "You signed this mandate")
        .await;

    // Stored as signed, with Alice's passkey; it approves the covered payment at claim.
    let sql = fleet.sql().await;
    let r = sql
        .query_one(
            "SELECT mandate_id, key_id, octet_length(signature), signed_by FROM mandates",
            &[],
        )
        .await
        .unwrap();
    let (id, key_id, length, signer): (String, String, i32, String) =
        (r.get(0), r.get(1), r.get(2), r.get(3));
    assert!(key_id.starts_with("passkey:"), "{key_id}");
    assert!(
        length > 64,
        "a passkey's assertion, not an Ed25519 signature"
    );
    assert_eq!(signer, "alice");
    let row = fleet.reaches(&op, Status::Succeeded).await;
    assert_eq!(row.decided_by, Some(format!("mandate:{id}")));
    assert_eq!(fleet.sim_effects(&op).await, 1, "paid once");
    browser.reload_until_shows("1 of 5").await;
    let standing = browser.text("#standing").await;
    assert!(
        standing.contains("100.01 KZT") && standing.contains("899.99 KZT"),
        "spent and left: {standing}"
    );

    // Revoked by its signer: what is left shows as revoked, not spent.
    browser.click_through("#revoke").await;
    // Only the revoked mandate's page has this (the page before also had a banner).
    browser.text_with("#revoked-budget", "899.99 KZT").await;
    browser
        .text_with(".banner.ok", "You revoked this mandate")
        .await;
    browser.text_with("#mandate-status", "revoked").await;
    assert!(
        browser
            .client
            .find(fantoccini::Locator::Css("#revoke"))
            .await
            .is_err(),
        "nothing left to revoke"
    );
    assert!(
        !browser.scrolls_sideways().await,
        "the mandate's page fits 360 px"
    );
    browser.screenshot("console-mandate-360.png").await;
    browser.click_through("a[href=\"/console/mandates\"]").await;
    let listed = browser.text("ul.mandates").await;
    assert!(
        listed.contains("revoked 899.99 KZT") && listed.contains("used 1 of 5 operations"),
        "{listed}"
    );
    assert!(!browser.scrolls_sideways().await, "the list fits 360 px");
    browser.close().await;
    drop(api);
    fleet.stop().await;
}

#[tokio::test]
async fn three_of_five_ticked_on_a_phone_are_approved_in_one_signed_decision() {
    let fleet = TestFleet::start().await;
    let issuer = fleet.spawn_issuer().await;
    let (api, console_url) = fleet.spawn_console_on_localhost(&issuer).await;
    let agent = fleet.token(AGENT, Role::Agent, &[TENANT]).await;
    let payments = [
        payment("vendor_77", 100_000, None),
        payment("vendor_12", 250_050, None),
        payment("vendor_77", 300_000, None),
        payment("vendor_3", 400_000, None),
        payment("vendor_12", 500_000, None),
    ];
    for p in &payments {
        api.submitted(&fleet.http, &agent, p).await;
    }
    let browser = alice_with_a_passkey(&fleet, &console_url).await;
    browser.viewport(1280, 900).await;
    browser.goto(&format!("{console_url}/console/batch")).await;
    assert!(!browser.scrolls_sideways().await, "1280 px");
    browser.viewport(360, 800).await;
    browser.goto(&format!("{console_url}/console/batch")).await;
    let page = browser.page_text().await;
    for p in &payments {
        assert!(page.contains(&op_of(p)), "{} is offered: {page}", op_of(p));
    }
    assert!(
        !browser.scrolls_sideways().await,
        "the selection scrolls sideways at 360 px"
    );
    let chosen = [&payments[0], &payments[1], &payments[2]];
    for p in chosen {
        browser
            .click(&format!("input[name=op][value=\"{}\"]", op_of(p)))
            .await;
    }
    browser.screenshot("console-batch-select-360.png").await;
    browser.click_through("#review-batch").await;

    // The decision before it is taken: how many, the totals, who is paid.
    browser.text_with("#batch-count", "3").await;
    browser.text_with("#batch-totals", "6,500.50 KZT").await;
    let payees = browser.text("#batch-payees").await;
    assert!(
        payees.contains("vendor_77: 2 operations, 4,000.00 KZT")
            && payees.contains("vendor_12: 1 operation, 2,500.50 KZT")
            && !payees.contains("vendor_3"),
        "{payees}"
    );
    browser
        .text_with(
            "#statement",
            &format!(
                "Approve 3 operations of tenant {TENANT} in one decision; in all: 6,500.50 KZT"
            ),
        )
        .await;
    let items = browser.text("#batch-items").await;
    assert!(items.contains("first payment"), "risk cues shown: {items}");
    assert!(!browser.scrolls_sideways().await, "the review fits 360 px");
    browser.screenshot("console-batch-review-360.png").await;
    assert_eq!(fleet.count("SELECT count(*) FROM approvals").await, 0);
    browser.click_through("#approve-batch").await;
    browser
        .text_with("#batch-done", "You approved 3 operations in one decision")
        .await;

    // Exactly those three, each by one approval of the batch, signed once with the passkey.
    for p in chosen {
        let row = fleet.row(&op_of(p)).await;
        assert_eq!(
            (row.approval_status, row.decided_by.as_deref()),
            (ApprovalStatus::Approved, Some("alice")),
            "{}",
            op_of(p)
        );
    }
    for p in &payments[3..] {
        fleet.still_pending(&op_of(p)).await;
    }
    let sql = fleet.sql().await;
    let r = sql
        .query_one(
            "SELECT count(*), count(DISTINCT batch_id), min(signed_in_with) FROM approvals",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        (
            r.get::<_, i64>(0),
            r.get::<_, i64>(1),
            r.get::<_, String>(2)
        ),
        (3, 1, "oidc".to_owned())
    );
    let batch = sql
        .query_one(
            "SELECT key_id, octet_length(signature), statement -> 'count' FROM approval_batches",
            &[],
        )
        .await
        .unwrap();
    assert!(batch.get::<_, String>(0).starts_with("passkey:"));
    assert!(batch.get::<_, i32>(1) > 64);
    assert_eq!(batch.get::<_, Value>(2), json!(3));
    // The two left are still offered; the approved are not.
    let page = browser.page_text().await;
    assert!(page.contains(&op_of(&payments[3])) && !page.contains(&op_of(&payments[0])));
    browser.close().await;
    drop(api);
    fleet.stop().await;
}
