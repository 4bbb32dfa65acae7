//! The console's security over plain HTTP (fleet-api as a real process, the test OpenID
//! Connect issuer in-process): how a sign-in is bound to the browser that started it, the
//! session cookie's attributes, the Content-Security-Policy, form tokens, no decision on
//! GET, idempotent decisions, tenant scope, signing out, and removing a principal.

use fleet_core::{ApprovalStatus, Role, Status};
use fleet_tests::at;
use fleet_tests::{
    console_get, console_post, contract_intent, cookie_value, deal_create_intent,
    deal_update_intent, form_token, hash_of, intent, no_redirects, op_of, order_change_intent,
    principal_add, refund_intent, session_of, set_cookie, sign_in_over_http, ApiProcess, SignedIn,
    TestFleet,
};
use reqwest::header::{CONTENT_SECURITY_POLICY, COOKIE, LOCATION};
use reqwest::StatusCode;
use serde_json::{json, Value};

const TENANT: &str = "org_482";

struct Console {
    fleet: TestFleet,
    api: ApiProcess,
    _issuer: fleet_oidc_issuer::RunningIssuer,
    agent: String,
}

async fn console() -> Console {
    let fleet = TestFleet::start().await;
    let (issuer, api, agent) = fleet
        .console_for(&[("alice", Role::Approver), ("bob", Role::Approver)])
        .await;
    Console {
        fleet,
        api,
        _issuer: issuer,
        agent,
    }
}

impl Console {
    async fn submit(&self, intent: &Value) {
        self.api
            .submitted(&self.fleet.http, &self.agent, intent)
            .await;
    }

    async fn get(&self, session: &str, path: &str) -> reqwest::Response {
        console_get(&self.api, session, path).await
    }

    async fn post(&self, session: &str, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
        console_post(&self.api, session, path, form).await
    }

    /// POSTs the form `fields` with the form token `token`.
    async fn post_with_token(
        &self,
        session: &str,
        path: &str,
        token: &str,
        fields: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut form = fields.to_vec();
        form.push(("form_token", token));
        self.post(session, path, &form).await
    }

    /// POSTs the approval form of the operation `op` for the snapshot `hash`.
    async fn approve_form(
        &self,
        session: &str,
        op: &str,
        token: &str,
        hash: &str,
    ) -> reqwest::Response {
        let path = format!("/console/operations/{op}/approve");
        self.post_with_token(session, &path, token, &[("payload_hash", hash)])
            .await
    }

    /// POSTs a decision's form that carries only a `reason`, with the form token `token`.
    async fn post_reason(
        &self,
        session: &str,
        path: &str,
        token: &str,
        reason: &str,
    ) -> reqwest::Response {
        self.post_with_token(session, path, token, &[("reason", reason)])
            .await
    }

    /// `GET /console/login/start` with `http`: the answer that sends it to the issuer.
    async fn start_sign_in(&self, http: &reqwest::Client) -> reqwest::Response {
        let start = self.api.url("/console/login/start");
        http.get(start).send().await.unwrap()
    }

    /// The page at `path` as the holder of `session` sees it.
    async fn page(&self, session: &str, path: &str) -> String {
        self.get(session, path).await.text().await.unwrap()
    }

    /// The operation's page as the holder of `session` sees it.
    async fn operation_page(&self, session: &str, op: &str) -> String {
        self.page(session, &format!("/console/operations/{op}"))
            .await
    }

    /// The form token of `session`, as its inbox carries it.
    async fn form_token_of(&self, session: &str) -> String {
        form_token(&self.page(session, "/console").await)
    }

    async fn approval(&self, op: &str) -> (Status, ApprovalStatus, Option<String>) {
        let row = self.fleet.row(op).await;
        (row.status, row.approval_status, row.decided_by)
    }
}

/// The `Set-Cookie` value carries every one of `attributes`.
fn assert_attributes(cookie: &str, attributes: &[&str]) {
    for attribute in attributes {
        assert!(cookie.contains(attribute), "{attribute} in {cookie}");
    }
}

fn location(r: &reqwest::Response) -> &str {
    r.headers().get(LOCATION).unwrap().to_str().unwrap()
}

/// The decision was taken (or found already taken: `done`), and the browser is sent back
/// to the operation's page saying so.
fn assert_done(r: &reqwest::Response, op: &str, done: &str) {
    assert_eq!(
        (r.status(), location(r)),
        (
            StatusCode::SEE_OTHER,
            format!("/console/operations/{op}?tenant=org_482&done={done}").as_str()
        )
    );
}

#[tokio::test]
async fn a_session_cookie_is_http_only_and_strict_and_no_page_runs_an_inline_or_foreign_script() {
    let c = console().await;
    // Signed out, every page sends the browser to sign in.
    let r = no_redirects()
        .get(c.api.url("/console"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        (r.status(), location(&r)),
        (StatusCode::SEE_OTHER, "/console/login")
    );

    let http = no_redirects();
    let start = c.start_sign_in(&http).await;
    let sign_in = set_cookie(&start, "fleet_console_sign_in")
        .unwrap()
        .to_owned();
    // The sign-in cookie must come back from the issuer's site: Lax, and only to the callback.
    assert_attributes(
        &sign_in,
        &[
            "HttpOnly",
            "SameSite=Lax",
            "Path=/console/auth",
            "Max-Age=600",
        ],
    );
    let to_issuer = location(&start).to_owned();
    for param in [
        "code_challenge=",
        "code_challenge_method=S256",
        "state=",
        "nonce=",
        "scope=openid",
    ] {
        assert!(
            to_issuer.contains(param),
            "the authorization request carries {param}: {to_issuer}"
        );
    }
    let at_issuer = http
        .get(format!("{to_issuer}&login_hint=sub-alice"))
        .send()
        .await
        .unwrap();
    let callback = http
        .get(location(&at_issuer))
        .header(
            COOKIE,
            format!("fleet_console_sign_in={}", cookie_value(&sign_in)),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(callback.status(), StatusCode::OK);
    let session = set_cookie(&callback, "fleet_console")
        .expect("a session cookie")
        .to_owned();
    assert_attributes(
        &session,
        &[
            "HttpOnly",
            "SameSite=Strict",
            "Path=/console",
            "Max-Age=28800",
        ],
    );
    assert!(
        !session.contains("Secure"),
        "Secure only when the console is served over https"
    );
    assert!(
        set_cookie(&callback, "fleet_console_sign_in")
            .unwrap()
            .contains("Max-Age=0"),
        "the sign-in cookie is spent"
    );
    let page = callback.text().await.unwrap();
    assert!(
        page.contains("http-equiv=\"refresh\"") && !page.contains("<script"),
        "the callback continues without a script"
    );

    let inbox = c.get(&cookie_value(&session), "/console").await;
    assert_eq!(inbox.status(), StatusCode::OK);
    let csp = inbox
        .headers()
        .get(CONTENT_SECURITY_POLICY)
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        csp.contains("default-src 'none'")
            && csp.contains("form-action 'self'")
            && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert!(
        csp.contains("script-src 'self'")
            && !csp.contains("unsafe-inline")
            && !csp.contains("unsafe-eval"),
        "no inline script, no script of another origin: {csp}"
    );
    assert_eq!(inbox.headers().get("cache-control").unwrap(), "no-store");
    // The one script is the console's own file (passkeys), never inline.
    let body = inbox.text().await.unwrap();
    assert_eq!(
        body.matches("<script").count(),
        body.matches("<script src=\"/console/assets/passkey.js\" defer></script>")
            .count(),
        "{body}"
    );
    // The stored session is the secret's hash, never the secret.
    let stored: String = c
        .fleet
        .sql()
        .await
        .query_one("SELECT session_hash FROM console_sessions", &[])
        .await
        .unwrap()
        .get(0);
    assert!(stored.starts_with("sha256:") && !stored.contains(&cookie_value(&session)[4..]));
    c.fleet.stop().await;
}

#[tokio::test]
async fn a_sign_in_counts_only_in_the_browser_that_started_it_and_only_for_a_known_subject() {
    let c = console().await;
    let http = no_redirects();
    let start = c.start_sign_in(&http).await;
    let at_issuer = http
        .get(format!("{}&login_hint=sub-alice", location(&start)))
        .send()
        .await
        .unwrap();
    let callback_url = location(&at_issuer).to_owned();
    // Without the cookie of the browser that started it (a link planted elsewhere): refused.
    let planted = http.get(&callback_url).send().await.unwrap();
    assert_eq!(planted.status(), StatusCode::BAD_REQUEST);
    assert!(set_cookie(&planted, "fleet_console").is_none());
    // With another sign-in's cookie (another state): refused.
    let other = c.start_sign_in(&http).await;
    let other_cookie = cookie_value(set_cookie(&other, "fleet_console_sign_in").unwrap());
    let crossed = http
        .get(&callback_url)
        .header(COOKIE, format!("fleet_console_sign_in={other_cookie}"))
        .send()
        .await
        .unwrap();
    assert_eq!(crossed.status(), StatusCode::BAD_REQUEST);
    assert!(set_cookie(&crossed, "fleet_console").is_none());
    // A subject that is nobody's principal signs in at the issuer but not here.
    match sign_in_over_http(&c.api, "sub-stranger").await {
        SignedIn::Refused(status, body) => {
            assert_eq!(status, StatusCode::FORBIDDEN);
            assert!(
                body.contains("fleetctl principal add --oidc-subject sub-stranger"),
                "{body}"
            );
        }
        SignedIn::Session(_) => panic!("an unknown subject got a session"),
    }
    let sessions = c.fleet.count("SELECT count(*) FROM console_sessions").await;
    assert_eq!(sessions, 0);
    c.fleet.stop().await;
}

#[tokio::test]
async fn decisions_need_a_post_with_the_sessions_form_token_and_are_idempotent() {
    let c = console().await;
    let i = intent();
    let op = op_of(&i);
    let hash = hash_of(&i);
    c.submit(&i).await;
    let alice = session_of(&c.api, "sub-alice").await;
    let bob = session_of(&c.api, "sub-bob").await;
    let page = c.operation_page(&alice, &op).await;
    let alices_token = form_token(&page);
    let bobs_token = c.form_token_of(&bob).await;
    let approve = format!("/console/operations/{op}/approve");

    let r = no_redirects()
        .get(c.api.url(&approve))
        .header(COOKIE, format!("fleet_console={alice}"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::METHOD_NOT_ALLOWED,
        "no decision on GET"
    );
    let r = c.post(&alice, &approve, &[("payload_hash", &hash)]).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN, "no form token");
    let r = c
        .post_with_token(&alice, &approve, &bobs_token, &[("payload_hash", &hash)])
        .await;
    assert_eq!(
        r.status(),
        StatusCode::FORBIDDEN,
        "another session's form token"
    );
    let r = no_redirects()
        .post(c.api.url(&approve))
        .form(&[("payload_hash", &hash), ("form_token", &alices_token)])
        .send()
        .await
        .unwrap();
    assert_eq!(
        (r.status(), location(&r)),
        (StatusCode::SEE_OTHER, "/console/login"),
        "a form token without its session"
    );
    assert_eq!(
        c.approval(&op).await,
        (Status::NotStarted, ApprovalStatus::Pending, None)
    );

    let r = c
        .post_with_token(&alice, &approve, &alices_token, &[("payload_hash", &hash)])
        .await;
    assert_done(&r, &op, "approved");
    assert_eq!(
        c.approval(&op).await,
        (
            Status::NotStarted,
            ApprovalStatus::Approved,
            Some("alice".into())
        )
    );
    // The same form again (a double click, a resent page) changes nothing and is no error.
    let r = c
        .post_with_token(&alice, &approve, &alices_token, &[("payload_hash", &hash)])
        .await;
    assert_done(&r, &op, "already");
    let approvals = c.fleet.count(&format!("SELECT count(*) FROM operation_events WHERE operation_id = '{op}' AND kind = 'approved'")).await;
    assert_eq!(approvals, 1);
    // Somebody else approving what is already approved is refused, not merged.
    let r = c
        .post_with_token(&bob, &approve, &bobs_token, &[("payload_hash", &hash)])
        .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);

    // A rejection needs a reason.
    let j = intent();
    c.submit(&j).await;
    let reject = format!("/console/operations/{}/reject", op_of(&j));
    let r = c.post_reason(&bob, &reject, &bobs_token, "  ").await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let r = c
        .post_reason(&bob, &reject, &bobs_token, "wrong beneficiary")
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        c.approval(&op_of(&j)).await,
        (
            Status::Cancelled,
            ApprovalStatus::Rejected,
            Some("bob".into())
        )
    );
    c.fleet.stop().await;
}

#[tokio::test]
async fn another_tenants_operation_is_not_found_in_the_console() {
    let c = console().await;
    let other_agent = c.fleet.token("other-bot", Role::Agent, &["org_999"]).await;
    let mut i = intent();
    i["tenant_id"] = "org_999".into();
    let op = op_of(&i);
    c.api.submitted(&c.fleet.http, &other_agent, &i).await;
    let alice = session_of(&c.api, "sub-alice").await;
    let page = c.get(&alice, &format!("/console/operations/{op}")).await;
    assert_eq!(page.status(), StatusCode::NOT_FOUND);
    let token = c.form_token_of(&alice).await;
    let r = c.approve_form(&alice, &op, &token, &hash_of(&i)).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    for listing in [
        "/console",
        &format!("/console/operations?id={op}"),
        "/console/operations?tenant=org_999",
        "/console/queue",
    ] {
        let body = c.get(&alice, listing).await.text().await.unwrap();
        assert!(
            !body.contains(&format!("href=\"/console/operations/{op}\"")),
            "{listing} lists another tenant's operation"
        );
    }
    assert_eq!(
        c.approval(&op).await,
        (Status::NotStarted, ApprovalStatus::Pending, None)
    );
    c.fleet.stop().await;
}

#[tokio::test]
async fn signing_out_or_removing_the_principal_ends_the_session() {
    let c = console().await;
    let alice = session_of(&c.api, "sub-alice").await;
    let token = c.form_token_of(&alice).await;
    let r = c
        .post(
            &alice,
            "/console/logout",
            &[("form_token", "0".repeat(64).as_str())],
        )
        .await;
    assert_eq!(
        r.status(),
        StatusCode::FORBIDDEN,
        "no signing out from another site"
    );
    let r = c
        .post(&alice, "/console/logout", &[("form_token", &token)])
        .await;
    assert_eq!(
        (r.status(), location(&r)),
        (StatusCode::SEE_OTHER, "/console/login")
    );
    assert!(set_cookie(&r, "fleet_console")
        .unwrap()
        .contains("Max-Age=0"));
    assert_eq!(
        c.get(&alice, "/console").await.status(),
        StatusCode::SEE_OTHER
    );

    // Removing bob (with fleetctl, as an admin would) ends his session and his sign-ins.
    let bob = session_of(&c.api, "sub-bob").await;
    assert_eq!(c.get(&bob, "/console").await.status(), StatusCode::OK);
    let out = c.fleet.fleetctl(&["principal", "remove", "bob"]).await;
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 console session(s) ended"));
    assert_eq!(
        c.get(&bob, "/console").await.status(),
        StatusCode::SEE_OTHER
    );
    assert!(matches!(
        sign_in_over_http(&c.api, "sub-bob").await,
        SignedIn::Refused(StatusCode::FORBIDDEN, _)
    ));
    let listed = String::from_utf8_lossy(&c.fleet.fleetctl(&["principal", "list"]).await.stdout)
        .into_owned();
    let bob_line = listed
        .lines()
        .find(|l| l.starts_with("bob "))
        .unwrap()
        .to_owned();
    assert!(
        !bob_line.contains("sub-bob") && !bob_line.contains(TENANT),
        "{bob_line}"
    );
    // Brought back deliberately, he signs in again.
    c.fleet
        .fleetctl(&principal_add(
            "bob",
            "approver",
            TENANT,
            &["--oidc-subject", "sub-bob"],
        ))
        .await;
    assert!(matches!(
        sign_in_over_http(&c.api, "sub-bob").await,
        SignedIn::Session(_)
    ));
    c.fleet.stop().await;
}

#[tokio::test]
async fn a_subject_names_one_principal_and_a_role_is_never_changed_by_adding() {
    use fleet_store::{NewPrincipal, PrincipalAdded};
    let fleet = TestFleet::start().await;
    let out = fleet
        .fleetctl(&principal_add(
            "alice",
            "approver",
            TENANT,
            &["--oidc-subject", "sub-alice"],
        ))
        .await;
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("added alice (approver), tenants org_482")
    );
    let tenants = vec!["org_483".to_owned()];
    let add = |name, role, subject| NewPrincipal {
        name,
        role,
        tenants: &tenants,
        oidc_subject: subject,
    };
    let s = &fleet.store;
    assert_eq!(
        s.add_principal(&add("alice", Role::Operator, None))
            .await
            .unwrap(),
        PrincipalAdded::RoleMismatch {
            existing: "approver".into()
        }
    );
    assert_eq!(
        s.add_principal(&add("alice", Role::Approver, Some("sub-other")))
            .await
            .unwrap(),
        PrincipalAdded::SubjectMismatch
    );
    assert_eq!(
        s.add_principal(&add("carol", Role::Approver, Some("sub-alice")))
            .await
            .unwrap(),
        PrincipalAdded::SubjectTaken { by: "alice".into() }
    );
    assert_eq!(
        s.add_principal(&add("alice", Role::Approver, Some("sub-alice")))
            .await
            .unwrap(),
        PrincipalAdded::Updated {
            tenants: vec![TENANT.into(), "org_483".into()]
        }
    );
    let who = s
        .principal_by_oidc_subject("sub-alice")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (who.name.as_str(), who.role, who.tenants.len()),
        ("alice", Role::Approver, 2)
    );
    // Nothing was written by the refusals: carol does not exist.
    assert_eq!(
        fleet
            .count("SELECT count(*) FROM principals WHERE name = 'carol'")
            .await,
        0
    );
    // A removed principal's tokens stop working and no new one is issued for it.
    let token = fleet.token("alice", Role::Approver, &[TENANT]).await;
    let hash = fleet_core::TokenHash::of_presented(&token).unwrap();
    assert!(s.authenticate(&hash).await.unwrap().is_some());
    fleet.fleetctl(&["principal", "remove", "alice"]).await;
    assert!(s.authenticate(&hash).await.unwrap().is_none());
    assert!(s
        .principal_by_oidc_subject("sub-alice")
        .await
        .unwrap()
        .is_none());
    let tenants: Vec<String> = vec![TENANT.into()];
    assert!(fleetctl::token::issue(s, "alice", Role::Approver, &tenants)
        .await
        .is_err());
    fleet.stop().await;
}

#[tokio::test]
async fn a_crm_update_is_shown_beside_the_deals_current_values() {
    let c = console().await;
    let deal = c.fleet.sim_deal("acct_9_renewal").await;
    let deal_id = deal["id"].as_str().unwrap().to_owned();
    // Someone edits the deal after the agent read version 1.
    let r = c
        .fleet
        .http
        .patch(format!("{}/_sim/deals/{deal_id}", c.fleet.sim.base_url))
        .json(&serde_json::json!({"owner_id": "u_8"}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    let update = deal_update_intent(
        &deal_id,
        1,
        serde_json::json!({"stage": "won", "owner_id": "u_9"}),
    );
    c.submit(&update).await;
    let alice = session_of(&c.api, "sub-alice").await;
    let page = c.operation_page(&alice, &op_of(&update)).await;
    let text = page.replace("&quot;", "\"").replace("&#34;", "\"");
    // The sentence counts the changes; the patch, the agent's own words, is quoted apart.
    assert!(
        text.contains(&format!(
            "<h1 class=\"headline\" id=\"headline\">Update deal {deal_id} at version 1, changing 2 fields<span class=\"quoted\"> <span class=\"member\">changes</span> <q class=\"free\">owner_id to \"u_9\", stage to \"won\"</q></span></h1>"
        )),
        "{text}"
    );
    for row in [
        "<td class=\"mono\">stage</td><td>\"proposal\"</td><td><strong>\"won\"</strong></td>",
        "<td class=\"mono\">owner_id</td><td>\"u_8\"</td><td><strong>\"u_9\"</strong></td>",
    ] {
        assert!(text.contains(row), "{row} in {text}");
    }
    assert!(text.contains("the CRM holds version <strong>2</strong> now — the update will be refused as a conflict"), "{text}");
    c.fleet.stop().await;
}

/// The console with an order change and a contract waiting, and alice's session:
/// (console, order change, contract, session).
async fn an_order_change_and_a_contract() -> (Console, Value, Value, String) {
    let c = console().await;
    let order = order_change_intent("ord_5531", "paid", "fulfilled");
    let contract = contract_intent("cust_1042");
    c.submit(&order).await;
    c.submit(&contract).await;
    let alice = session_of(&c.api, "sub-alice").await;
    (c, order, contract, alice)
}

#[tokio::test]
async fn the_inbox_and_the_operation_page_say_what_an_order_change_and_a_contract_do() {
    let (c, order, contract, alice) = an_order_change_and_a_contract().await;
    let inbox = c.page(&alice, "/console").await;
    let order_line = "Move order ord_5531 from paid to fulfilled";
    let contract_line = "Send contract template tpl_msa_v3 to recipient cust_1042";
    for line in [order_line, contract_line] {
        assert!(inbox.contains(line), "{line} in {inbox}");
    }
    for (op, line) in [
        (op_of(&order), order_line),
        (op_of(&contract), contract_line),
    ] {
        let page = c.operation_page(&alice, &op).await;
        assert!(
            page.contains(&format!(
                "<h1 class=\"headline\" id=\"headline\">{line}</h1>"
            )),
            "{page}"
        );
    }
    c.fleet.stop().await;
}

#[tokio::test]
async fn an_object_the_fleet_has_no_record_of_is_noted_on_the_approval_page() {
    let (c, order, contract, alice) = an_order_change_and_a_contract().await;
    let order_page = c.operation_page(&alice, &op_of(&order)).await;
    assert!(
        order_page.contains(
            "<p class=\"note\" id=\"foreign-object\">The order ord_5531 was not made by the fleet"
        ),
        "{order_page}"
    );
    // A contract names no provider object.
    let contract_page = c.operation_page(&alice, &op_of(&contract)).await;
    assert!(!contract_page.contains("foreign-object"));
    c.fleet.stop().await;
}

#[tokio::test]
async fn only_operators_dispute_and_a_dispute_is_recorded_as_theirs() {
    let c = console().await;
    c.fleet
        .person("dana", Role::Operator, &[TENANT], "sub-dana")
        .await;
    let i = intent();
    let op = op_of(&i);
    c.submit(&i).await;
    let alice = session_of(&c.api, "sub-alice").await;
    let dana = session_of(&c.api, "sub-dana").await;
    let alices = c.form_token_of(&alice).await;
    let danas = c.form_token_of(&dana).await;
    let dispute = format!("/console/operations/{op}/dispute");
    let r = c.post_reason(&alice, &dispute, &alices, "looks odd").await;
    assert_eq!(
        r.status(),
        StatusCode::FORBIDDEN,
        "an approver does not dispute"
    );
    let r = c.approve_form(&dana, &op, &danas, &hash_of(&i)).await;
    assert_eq!(
        r.status(),
        StatusCode::FORBIDDEN,
        "an operator does not approve"
    );
    let r = c
        .post_reason(&dana, &dispute, &danas, "customer reports a double charge")
        .await;
    assert_done(&r, &op, "disputed");
    let r = c.post_reason(&dana, &dispute, &danas, "again").await;
    assert_eq!(
        location(&r).to_owned(),
        format!("/console/operations/{op}?tenant=org_482&done=already")
    );
    assert_eq!(c.approval(&op).await.0, Status::Disputed);
    let last = c.fleet.store.events(at(&op)).await.unwrap().pop().unwrap();
    assert_eq!(
        (
            last.actor.as_str(),
            last.evidence.unwrap()["reason"].as_str()
        ),
        ("operator:dana", Some("customer reports a double charge"))
    );
    c.fleet.stop().await;
}

#[tokio::test]
async fn with_access_claims_configured_the_id_token_says_the_role_and_tenants() {
    use fleet_tests::{CLAIMED_ROLE, CLAIMED_TENANTS};
    let fleet = TestFleet::start().await;
    let issuer = fleet.spawn_issuer().await;
    let api = fleet
        .spawn_api(&[
            ("OIDC_ISSUER_URL", &issuer.issuer_url),
            ("OIDC_CLIENT_ID", &issuer.client_id),
            ("OIDC_CLIENT_SECRET", &issuer.client_secret),
            ("OIDC_ROLE_CLAIM", CLAIMED_ROLE),
            ("OIDC_TENANTS_CLAIM", CLAIMED_TENANTS),
        ])
        .await;
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    // The table says Erin is an agent of no tenant; her ID token says approver of org_482:
    // the console follows the token, the database's approval rule follows the table.
    fleet.person("erin", Role::Agent, &[], "sub-erin").await;
    // Alice's ID token carries no access claims: with claims configured she is refused,
    // whatever the table says.
    fleet
        .person("alice", Role::Approver, &[TENANT], "sub-alice")
        .await;
    let i = intent();
    let (op, hash) = (op_of(&i), hash_of(&i));
    api.submitted(&fleet.http, &agent, &i).await;

    match sign_in_over_http(&api, "sub-alice").await {
        SignedIn::Refused(status, body) => {
            assert_eq!(status, StatusCode::FORBIDDEN);
            assert!(body.contains("did not say what you may do here"), "{body}");
        }
        SignedIn::Session(_) => panic!("a sign-in without access claims must be refused"),
    }

    let erin = session_of(&api, "sub-erin").await;
    let page = console_get(&api, &erin, &format!("/console/operations/{op}"))
        .await
        .text()
        .await
        .unwrap();
    let token = form_token(&page);
    let approve = format!("/console/operations/{op}/approve");
    let form = [("payload_hash", hash.as_str()), ("form_token", &token)];
    // The claims offer her the decision, but only the deployment's records make an
    // approval count: as an agent of no tenant there, hers is refused and nothing recorded.
    let r = console_post(&api, &erin, &approve, &form).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let body = r.text().await.unwrap();
    assert!(
        body.contains("do not make you an approver of this tenant"),
        "{body}"
    );
    assert_eq!(
        fleet
            .count(&format!(
                "SELECT count(*) FROM approvals WHERE operation_id = '{op}'"
            ))
            .await,
        0
    );
    // Once an administrator records her as the tenant's approver, the same session approves.
    fleet
        .sql()
        .await
        .batch_execute(
            "UPDATE principals SET role = 'approver' WHERE name = 'erin';
             INSERT INTO principal_tenants (principal, tenant_id) VALUES ('erin', 'org_482');",
        )
        .await
        .unwrap();
    let r = console_post(&api, &erin, &approve, &form).await;
    assert_done(&r, &op, "approved");
    let row = fleet.row(&op).await;
    assert_eq!(
        (row.approval_status, row.decided_by.as_deref()),
        (ApprovalStatus::Approved, Some("erin"))
    );
    let by_oidc = format!("SELECT count(*) FROM operation_events WHERE operation_id = '{op}' AND kind = 'approved' AND actor LIKE '%erin' AND signed_in_with = 'oidc'");
    assert_eq!(fleet.count(&by_oidc).await, 1);
    fleet.stop().await;
}

/// The directional and invisible characters every free-text field below carries.
const HIDDEN: [char; 5] = ['\u{202E}', '\u{200B}', '\u{2066}', '\u{200F}', '\u{FEFF}'];

/// `text` with all of [`HIDDEN`] mixed in.
fn hiding(text: &str) -> String {
    format!("{text} \u{202E}evil\u{202C}\u{200B}\u{2066}x\u{2069}\u{200F}\u{FEFF}")
}

/// Every character of `page` a person sees for what it is: nothing draws nothing or
/// reorders the text around it (line breaks and spaces aside).
fn assert_nothing_hidden(page: &str, what: &str) {
    let hidden: Vec<String> = page
        .chars()
        .filter(|c| !matches!(c, ' ' | '\n') && fleet_core::visible::is_hidden(*c))
        .map(fleet_core::visible::code_point)
        .collect();
    assert!(hidden.is_empty(), "{what}: {hidden:?} in {page}");
    for c in HIDDEN {
        assert!(
            page.contains(&fleet_core::visible::code_point(c)),
            "{what}: {} is shown",
            fleet_core::visible::code_point(c)
        );
    }
}

#[tokio::test]
async fn every_free_text_field_is_shown_with_its_hidden_characters_revealed() {
    let c = console().await;
    let mut payment = intent();
    payment["rationale"] = json!(hiding("Invoice is due today."));
    let mut deal = deal_create_intent();
    deal["payload"]["name"] = json!(hiding("Acme renewal"));
    deal["payload"]["stage"] = json!(hiding("proposal"));
    let mut refund = refund_intent("pay_01J", 2500);
    refund["payload"]["reason"] = json!(hiding("duplicate"));
    let mut order = order_change_intent("ord_5531", "paid", "fulfilled");
    order["payload"]["reason"] = json!(hiding("Shipped"));
    let mut contract = contract_intent("cust_1042");
    contract["payload"]["subject"] = json!(hiding("Master services agreement"));
    let update = deal_update_intent("deal_7", 3, json!({ hiding("note"): hiding("renewed") }));
    let all = [&payment, &deal, &refund, &order, &contract, &update];
    for i in all {
        c.submit(i).await;
    }
    let alice = session_of(&c.api, "sub-alice").await;
    // A person's free text too: the rejection's reason, in the timeline.
    let page = c.operation_page(&alice, &op_of(&payment)).await;
    let r = c
        .post(
            &alice,
            &format!("/console/operations/{}/reject", op_of(&payment)),
            &[
                ("reason", hiding("wrong vendor").as_str()),
                ("form_token", &form_token(&page)),
            ],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "rejected");
    for i in all {
        let op = op_of(i);
        let page = c.operation_page(&alice, &op).await;
        assert_nothing_hidden(&page, &format!("{} page", i["action"]));
    }
    let page = c.operation_page(&alice, &op_of(&payment)).await;
    assert!(
        page.contains("wrong vendor ⟨U+202E⟩evil⟨U+202C⟩"),
        "the rejection's reason is shown revealed: {page}"
    );
    let inbox = c.page(&alice, "/console").await;
    let hidden_in_inbox = inbox
        .chars()
        .filter(|c| !matches!(c, ' ' | '\n') && fleet_core::visible::is_hidden(*c))
        .count();
    assert_eq!(hidden_in_inbox, 0, "{inbox}");
    assert!(inbox.contains("Acme renewal ⟨U+202E⟩evil"), "{inbox}");
    c.fleet.stop().await;
}
