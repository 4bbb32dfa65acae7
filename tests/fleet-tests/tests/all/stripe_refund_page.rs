//! A refund's approval page through Stripe, in a real browser (headless Chromium) at a
//! phone's width and a desktop's: the original charge the intake read from Stripe (the
//! customer by name, e-mail and id, the card, the date, the amount, what was refunded
//! before, what is left) is shown in a block of its own, "Original charge", from what was
//! frozen with the operation, and the page never scrolls sideways. Against localstripe,
//! and against the project's Stripe simulator, whose charges describe their card as
//! Stripe's do (localstripe's do not). fleet-api runs as a real process, prepare
//! in-process reading Stripe.

use fleet_core::Role;
use fleet_provider_sim::stripe::{StripeSim, StripeSimConfig, STRIPE_SIM_KEY};
use fleet_tests::{
    refund_intent, Browser, Localstripe, StripeProxy, TestFleet, LOCALSTRIPE_KEY, TENANT,
};
use serde_json::{json, Value};

#[tokio::test]
async fn the_approval_page_of_a_refund_shows_its_original_charge_at_360_and_1280_px() {
    let stripe = Localstripe::start().await;
    let proxy = StripeProxy::start(&stripe.base_url).await;
    let mut fleet = TestFleet::start().await;
    fleet.spawn_prepare_at_stripe(&proxy.base_url, LOCALSTRIPE_KEY);
    let issuer = fleet.spawn_issuer().await;
    let api = fleet.spawn_console(&issuer).await;
    fleet
        .person("alice", Role::Approver, &[TENANT], "sub-alice")
        .await;

    // Jane Doe's payment of 50.00 KZT with her saved Visa, 10.00 KZT of it refunded already.
    let (customer, card) = stripe.customer_with_card("4242424242424242").await;
    let paid = stripe
        .post(
            "/v1/payment_intents",
            &[
                ("amount", "5000"),
                ("currency", "kzt"),
                ("customer", customer.as_str()),
                ("payment_method", card.as_str()),
                ("confirm", "true"),
            ],
        )
        .await;
    assert_eq!(paid["status"], "succeeded", "{paid}");
    let pi = paid["id"].as_str().expect("a PaymentIntent id").to_owned();
    let earlier = stripe
        .post(
            "/v1/refunds",
            &[("payment_intent", pi.as_str()), ("amount", "1000")],
        )
        .await;
    assert_eq!(earlier["status"], "succeeded", "{earlier}");
    let op = fleet.submitted(&refund_intent(&pi, 1_500)).await;

    let browser = Browser::start().await;
    browser.sign_in(&api.base_url, "sub-alice").await;
    let page = api.url(&format!("/console/operations/{op}"));
    for width in [360, 1280] {
        browser.viewport(width, 900).await;
        browser.goto(&page).await;
        let block = browser.text("#original-charge").await;
        for shown in [
            "Original charge",
            pi.as_str(),
            "Jane Doe <jane@example.com>",
            customer.as_str(),
            "50.00 KZT",
            "Already refunded",
            "10.00 KZT",
            "Left to refund",
            "40.00 KZT",
            " UTC",
        ] {
            assert!(block.contains(shown), "{shown} at {width} px in {block}");
        }
        assert!(
            !browser.scrolls_sideways().await,
            "the refund's approval page scrolls sideways at {width} px"
        );
    }
    // The block is what intake froze: a refund made at Stripe since changes nothing on it.
    stripe
        .post(
            "/v1/refunds",
            &[("payment_intent", pi.as_str()), ("amount", "500")],
        )
        .await;
    browser.goto(&page).await;
    assert_eq!(
        browser.text("#original-charge .refunded-before").await,
        "10.00 KZT"
    );
    assert_eq!(
        browser.text("#original-charge .left-to-refund").await,
        "40.00 KZT"
    );
    browser.close().await;
    drop(api);
    fleet.stop().await;
}

#[tokio::test]
async fn the_original_charge_names_the_card_stripe_charged_at_360_and_1280_px() {
    let stripe = StripeSim::start(StripeSimConfig::default())
        .await
        .expect("the Stripe simulator");
    stripe.put_customer(
        None,
        json!({"id": "cus_1Jane", "object": "customer", "name": "Jane Doe",
               "email": "jane@example.com"}),
    );
    stripe.put_payment_method(
        None,
        json!({"id": "pm_1JaneVisa", "object": "payment_method", "type": "card",
               "customer": "cus_1Jane", "card": {"brand": "visa", "last4": "4242",
               "country": "FR", "fingerprint": "fpJaneVisa4242"}}),
    );
    let mut fleet = TestFleet::start().await;
    fleet.spawn_prepare_at_stripe(&stripe.base_url, STRIPE_SIM_KEY);
    let issuer = fleet.spawn_issuer().await;
    let api = fleet.spawn_console(&issuer).await;
    fleet
        .person("alice", Role::Approver, &[TENANT], "sub-alice")
        .await;

    // Jane Doe paid 80.00 KZT with her Visa; 20.00 KZT of it was refunded since.
    let post = |path: &'static str, form: Vec<(&'static str, String)>| {
        let request = fleet
            .http
            .post(format!("{}{path}", stripe.base_url))
            .bearer_auth(STRIPE_SIM_KEY)
            .form(&form);
        async move {
            let answer = request.send().await.expect("the simulator answers");
            assert!(answer.status().is_success(), "{path}: {}", answer.status());
            answer.json::<Value>().await.expect("JSON")
        }
    };
    let paid = post(
        "/v1/payment_intents",
        vec![
            ("amount", "8000".into()),
            ("currency", "kzt".into()),
            ("customer", "cus_1Jane".into()),
            ("payment_method", "pm_1JaneVisa".into()),
            ("confirm", "true".into()),
        ],
    )
    .await;
    let pi = paid["id"].as_str().expect("a PaymentIntent id").to_owned();
    let form = vec![("payment_intent", pi.clone()), ("amount", "2000".into())];
    post("/v1/refunds", form).await;
    let op = fleet.submitted(&refund_intent(&pi, 1_000)).await;

    let browser = Browser::start().await;
    browser.sign_in(&api.base_url, "sub-alice").await;
    for width in [360, 1280] {
        browser.viewport(width, 900).await;
        browser
            .goto(&api.url(&format!("/console/operations/{op}")))
            .await;
        let block = browser.text("#original-charge").await;
        for shown in [
            pi.as_str(),
            "Jane Doe <jane@example.com> · cus_1Jane",
            "visa •••• 4242",
            "80.00 KZT",
            "20.00 KZT",
            "60.00 KZT",
        ] {
            assert!(block.contains(shown), "{shown} at {width} px in {block}");
        }
        assert!(
            !browser.scrolls_sideways().await,
            "the refund's approval page scrolls sideways at {width} px"
        );
    }
    browser.close().await;
    drop(api);
    fleet.stop().await;
}
