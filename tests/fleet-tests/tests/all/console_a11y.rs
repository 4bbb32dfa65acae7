//! The console's pages, in a real headless Chromium, at a phone's width (360 px) and a
//! desktop's (1280 px), checked by axe-core (npm, pinned; `tests/fleet-tests/axe.sh`):
//! sign-in, the inbox, an operation pending and one decided, passkeys, mandates (the list
//! and the form) and the batch page each have no violation. Screenshots at 360 px are kept
//! with the test logs.

use fleet_core::{Role, Status};
use fleet_tests::{hash_of, intent, op_of, Browser, TestFleet};
use reqwest::StatusCode;
use serde_json::{json, Value};

const TENANT: &str = "org_482";

/// The violations of `browser`'s page at each width, as `(width, path, violation)` lines.
async fn violations_at(browser: &Browser, url: &str, name: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (width, height) in [(360, 800), (1280, 1000)] {
        browser.viewport(width, height).await;
        browser.goto(url).await;
        if width == 360 {
            browser.screenshot(&format!("a11y-{name}-360.png")).await;
        }
        for v in browser.axe_violations().await {
            let nodes: Vec<String> = v["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|n| format!("{} {}", n["target"], n["html"]))
                .collect();
            found.push(format!(
                "{width}px {name}: {} ({}) {}: {}",
                v["id"].as_str().unwrap_or("?"),
                v["impact"].as_str().unwrap_or("?"),
                v["help"].as_str().unwrap_or("?"),
                nodes.join(" | ")
            ));
        }
    }
    found
}

#[tokio::test]
async fn every_console_page_has_no_axe_violation_at_360_and_1280_px() {
    let mut fleet = TestFleet::start().await;
    fleet.spawn_execute();
    let issuer = fleet.spawn_issuer().await;
    let api = fleet.spawn_console(&issuer).await;
    fleet
        .person("alice", Role::Approver, &[TENANT], "sub-alice")
        .await;
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let bob = fleet.token("bob", Role::Approver, &[TENANT]).await;
    let pending = intent();
    api.submitted(&fleet.http, &agent, &pending).await;
    let decided: Value = intent();
    api.submitted(&fleet.http, &agent, &decided).await;
    let approved = api
        .post(
            &fleet.http,
            &bob,
            &format!("/v1/operations/{}/approve", op_of(&decided)),
            &json!({"payload_hash": hash_of(&decided)}),
        )
        .await;
    assert_eq!(approved.status(), StatusCode::OK);
    fleet.reaches(&op_of(&decided), Status::Succeeded).await;

    let browser = Browser::start().await;
    let mut found = violations_at(&browser, &api.url("/console/login"), "sign-in").await;
    browser.viewport(1280, 1000).await;
    browser.sign_in(&api.url(""), "sub-alice").await;
    let pages = [
        ("/console".to_owned(), "inbox"),
        (
            format!("/console/operations/{}", op_of(&pending)),
            "operation-pending",
        ),
        (
            format!("/console/operations/{}", op_of(&decided)),
            "operation-decided",
        ),
        ("/console/passkeys".to_owned(), "passkeys"),
        ("/console/mandates".to_owned(), "mandates"),
        ("/console/mandates/new".to_owned(), "mandate-form"),
        ("/console/batch".to_owned(), "batch"),
    ];
    for (path, name) in &pages {
        found.extend(violations_at(&browser, &api.url(path), name).await);
    }
    // At 360 px the payee box is one column: each label above its value, and the account
    // number on one line of the box's full width.
    browser.viewport(360, 800).await;
    browser.goto(&api.url(&pages[1].0)).await;
    let payee = browser
        .client
        .execute(
            "const box = document.querySelector('dl.payee');
             const dt = box.querySelector('dt'), dd = box.querySelector('dd.payee-account');
             const range = document.createRange(); range.selectNodeContents(dd);
             const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
             dd.scrollIntoView();
             return {dt_left: dt.getBoundingClientRect().left, dd_left: dd.getBoundingClientRect().left,
                     dd_width: dd.getBoundingClientRect().width, box_width: box.clientWidth, lines};",
            vec![],
        )
        .await
        .expect("measure the payee box");
    browser.screenshot("a11y-payee-360.png").await;
    assert_eq!(payee["dt_left"], payee["dd_left"], "stacked: {payee}");
    assert_eq!(payee["lines"], 1, "the account on one line: {payee}");
    assert!(
        payee["dd_width"].as_f64().unwrap() > payee["box_width"].as_f64().unwrap() * 0.8,
        "the value takes the box's width: {payee}"
    );
    browser.close().await;
    assert!(found.is_empty(), "axe-core found:\n{}", found.join("\n"));
    fleet.stop().await;
}
