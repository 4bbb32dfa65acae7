//! What the console says in words, where the words could lie: a headline whose free text
//! tries to say another amount before the real one (read in a real headless Chromium, at a
//! phone's and a desktop's width), and a decision's confirmation that an address alone
//! cannot summon. fleet-api runs as a real process with the test OpenID Connect issuer.

use fleet_core::Role;
use fleet_tests::{
    console_get, console_post, deal_create_intent, form_token, intent, session_of, ApiProcess,
    Browser, TestFleet,
};
use reqwest::StatusCode;
use serde_json::{json, Value};

const TENANT: &str = "org_482";

/// The deal name that made the headline read "…worth 10.00 KZT…" before the real amount,
/// padded with blank Braille patterns (U+2800) to push the rest out of view.
fn lying_name() -> String {
    format!(
        "Acme renewal\" worth 10.00 KZT at stage lead, owned by u_7.{} Also note: \"x",
        "\u{2800}".repeat(40)
    )
}

/// A deal of 50,000,000.00 KZT named [`lying_name`].
fn lying_deal() -> Value {
    let mut i = deal_create_intent();
    i["payload"]["name"] = json!(lying_name());
    i["payload"]["amount_minor"] = json!(5_000_000_000i64);
    i["payload"]["currency"] = json!("KZT");
    i["payload"]["stage"] = json!("lead");
    i
}

/// The first amount ("1,234.50 KZT") in `text`.
fn first_amount(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    words.windows(2).find_map(|w| {
        let number = w[0].trim_start_matches(|c: char| !c.is_ascii_digit());
        let is_number = !number.is_empty()
            && number
                .chars()
                .all(|c| c.is_ascii_digit() || c == ',' || c == '.')
            && number.contains('.');
        let code = w[1].trim_end_matches(|c: char| !c.is_ascii_uppercase());
        (is_number && code.len() == 3 && code.chars().all(|c| c.is_ascii_uppercase()))
            .then(|| format!("{number} {code}"))
    })
}

/// What a person's browser shows of the headline at `css`: (the sentence, its own first
/// text node; the whole headline's text; the free text's element's text; whether the free
/// text is laid out below the sentence, not beside or inside it).
async fn headline_seen(browser: &Browser, css: &str) -> (String, String, String, bool) {
    let script = "const h = document.querySelector(arguments[0]);
        const sentence = h.firstChild;
        const range = document.createRange(); range.selectNodeContents(sentence);
        const said = range.getBoundingClientRect();
        const free = h.querySelector('q.free');
        return [sentence.nodeType === Node.TEXT_NODE ? sentence.nodeValue : null,
                h.innerText, free ? free.innerText : null,
                free ? free.getBoundingClientRect().top >= said.bottom - 1 : false];";
    let seen = browser
        .client
        .execute(script, vec![json!(css)])
        .await
        .expect("read the headline");
    let text = |i: usize| seen[i].as_str().unwrap_or_default().to_owned();
    (text(0), text(1), text(2), seen[3].as_bool() == Some(true))
}

#[tokio::test]
async fn a_deal_name_cannot_say_an_amount_before_the_real_one_at_a_phones_or_a_desktops_width() {
    let fleet = TestFleet::start().await;
    let issuer = fleet.spawn_issuer().await;
    let api = fleet.spawn_console(&issuer).await;
    fleet
        .person("alice", Role::Approver, &[TENANT], "sub-alice")
        .await;
    let deal = lying_deal();
    let op = fleet
        .stored_with_quorum(&deal, 1, Some("billing-bot"))
        .await;

    let browser = Browser::start().await;
    browser.sign_in(&api.base_url, "sub-alice").await;
    let sentence = "Create a deal worth 50,000,000.00 KZT, owned by u_7";
    for width in [360, 1280] {
        browser.viewport(width, 900).await;
        for (path, css, shot) in [
            ("/console".to_owned(), "a.headline", "inbox"),
            (
                format!("/console/operations/{op}"),
                "h1.headline",
                "approval",
            ),
        ] {
            browser.goto(&api.url(&path)).await;
            browser.find(&format!("{css} q.free")).await;
            let (said, whole, free, below) = headline_seen(&browser, css).await;
            assert_eq!(
                said, sentence,
                "{shot} at {width} px: the headline's own text"
            );
            assert_eq!(
                first_amount(&whole).as_deref(),
                Some("50,000,000.00 KZT"),
                "{shot} at {width} px reads the real amount first: {whole}"
            );
            assert!(
                free.contains("Acme renewal\" worth 10.00 KZT")
                    && free.contains("⟨U+2800⟩⟨U+2800⟩")
                    && !free.contains('\u{2800}'),
                "{shot} at {width} px: the name in its own element, its padding revealed: {free}"
            );
            assert!(
                below,
                "{shot} at {width} px: the free text sits below the sentence"
            );
            assert!(
                !browser.scrolls_sideways().await,
                "{shot} scrolls sideways at {width} px"
            );
            browser
                .screenshot(&format!("console-free-text-{shot}-{width}.png"))
                .await;
        }
    }
    browser.close().await;
    fleet.stop().await;
}

/// The page of `op` at `query` as the holder of `session` sees it.
async fn page_after(api: &ApiProcess, session: &str, op: &str, query: &str) -> String {
    let path = format!("/console/operations/{op}?tenant={TENANT}&{query}");
    let r = console_get(api, session, &path).await;
    assert_eq!(r.status(), StatusCode::OK, "{path}");
    r.text().await.unwrap()
}

const DONE: [&str; 5] = ["approved", "rejected", "resolved", "disputed", "already"];

/// Whether `page` confirms a decision (any of them).
fn confirms(page: &str) -> bool {
    page.contains("class=\"banner ok\"")
}

#[tokio::test]
async fn a_decisions_confirmation_appears_only_when_that_persons_decision_is_on_record() {
    let fleet = TestFleet::start().await;
    let issuer = fleet.spawn_issuer().await;
    let api = fleet.spawn_console(&issuer).await;
    for name in ["alice", "bob"] {
        fleet
            .person(name, Role::Approver, &[TENANT], &format!("sub-{name}"))
            .await;
    }
    let i = intent();
    let op = fleet.stored_with_quorum(&i, 1, Some("billing-bot")).await;
    let alice = session_of(&api, "sub-alice").await;
    let bob = session_of(&api, "sub-bob").await;

    // Pending, nobody decided: no address makes the page say "You rejected…".
    for done in DONE {
        let page = page_after(&api, &alice, &op, &format!("done={done}")).await;
        assert!(
            !confirms(&page),
            "done={done} with nothing on record: {page}"
        );
        assert!(!page.contains("You rejected"), "done={done}");
    }
    fleet.still_pending(&op).await;

    // Alice rejects: her page confirms it, and only that decision.
    let page = page_after(&api, &alice, &op, "").await;
    let r = console_post(
        &api,
        &alice,
        &format!("/console/operations/{op}/reject"),
        &[
            ("reason", "wrong vendor"),
            ("form_token", &form_token(&page)),
        ],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let page = page_after(&api, &alice, &op, "done=rejected").await;
    assert!(
        page.contains("You rejected this operation; it is cancelled."),
        "{page}"
    );
    for done in ["approved", "resolved", "disputed"] {
        let page = page_after(&api, &alice, &op, &format!("done={done}")).await;
        assert!(!confirms(&page), "alice did not take {done}: {page}");
    }
    assert!(confirms(
        &page_after(&api, &alice, &op, "done=already").await
    ));

    // Bob, sent alice's address, is not told he rejected it.
    for done in DONE {
        let page = page_after(&api, &bob, &op, &format!("done={done}")).await;
        assert!(!confirms(&page), "bob decided nothing ({done}): {page}");
    }
    fleet.stop().await;
}
