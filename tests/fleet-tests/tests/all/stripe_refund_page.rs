//! A refund's approval page through Stripe, in a real browser (headless Chromium) at a
//! phone's width and a desktop's: the original charge the intake read from localstripe
//! (the customer by name, e-mail and id, the card, the date, the amount, what was refunded
//! before, what is left; localstripe's charges do not describe their card, which the
//! connected-account tests prove against the project's simulator)
//! is shown in a block of its own, "Original charge", from what was frozen with the
//! operation, and the page never scrolls sideways. fleet-api runs as a real process,
//! prepare in-process reading Stripe.

use fleet_core::catalogue::Dialect;
use fleet_core::Role;
use fleet_tests::{
    refund_intent, Browser, Localstripe, StripeProxy, TestFleet, LOCALSTRIPE_KEY, TENANT,
};

#[tokio::test]
async fn the_approval_page_of_a_refund_shows_its_original_charge_at_360_and_1280_px() {
    let stripe = Localstripe::start().await;
    let proxy = StripeProxy::start(&stripe.base_url).await;
    let mut fleet = TestFleet::start().await;
    let mut configs = fleet.provider_configs();
    let payments = configs.provider_mut("payments");
    payments.base_url = proxy.base_url.clone();
    payments.api_key = fleet_runtime::Secret::new(LOCALSTRIPE_KEY.to_owned());
    payments.dialect = Dialect::Stripe { search: false };
    fleet.spawn_prepare_at(&configs);
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
