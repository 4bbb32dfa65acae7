use chrono::TimeZone;
use serde_json::json;

use super::*;
use crate::lookup::Lookup;
use crate::outcome::NoAnswerKind;

fn answer(status: u16, body: Value) -> CallResult {
    crate::outcome::answer(status, false, body)
}

fn intent(status: &str) -> Value {
    json!({"id": "pi_1", "object": "payment_intent", "status": status,
           "metadata": {"fleet_operation": "op_A"}})
}

#[test]
fn a_payment_intent_reads_by_its_status() {
    assert_eq!(
        classify_charge(&answer(200, intent("succeeded"))),
        Outcome::Succeeded {
            external_id: "pi_1".into()
        }
    );
    assert_eq!(
        classify_charge(&answer(200, intent("processing"))),
        Outcome::Accepted {
            external_id: Some("pi_1".into())
        }
    );
    assert_eq!(
        classify_charge(&answer(200, intent("requires_action"))),
        Outcome::Failed {
            code: AUTHENTICATION_REQUIRED.into()
        }
    );
    let mut declined = intent("requires_payment_method");
    declined["last_payment_error"] =
        json!({"code": "card_declined", "decline_code": "insufficient_funds"});
    assert_eq!(
        classify_charge(&answer(200, declined)),
        Outcome::Failed {
            code: "insufficient_funds".into()
        }
    );
    assert_eq!(
        classify_charge(&answer(200, intent("canceled"))),
        Outcome::Failed {
            code: "payment_intent_canceled".into()
        }
    );
    for unproven in ["requires_confirmation", "requires_capture", "weird"] {
        assert_eq!(
            classify_charge(&answer(200, intent(unproven))),
            Outcome::Unknown {
                reason: Reason::UnreadableSuccessBody,
                escalate: false
            },
            "{unproven}"
        );
    }
}

#[test]
fn declines_fail_with_stripes_code_and_the_rest_as_refunds_do() {
    let card_error = |code: &str, decline: Option<&str>| json!({"error": {"type": "card_error", "code": code, "decline_code": decline}});
    assert_eq!(
        classify_charge(&answer(
            402,
            card_error("card_declined", Some("insufficient_funds"))
        )),
        Outcome::Failed {
            code: "insufficient_funds".into()
        }
    );
    for code in ["card_declined", "expired_card", "authentication_required"] {
        assert_eq!(
            classify_charge(&answer(402, card_error(code, None))),
            Outcome::Failed { code: code.into() }
        );
    }
    assert_eq!(
        classify_charge(&answer(
            400,
            json!({"error": {"type": "idempotency_error"}})
        )),
        Outcome::Unknown {
            reason: Reason::IdempotencyKeyReused,
            escalate: true
        }
    );
    for status in [401, 403] {
        assert_eq!(
            classify_charge(&answer(
                status,
                json!({"error": {"type": "invalid_request_error"}})
            )),
            Outcome::Unknown {
                reason: Reason::Http(status),
                escalate: true
            }
        );
    }
    assert_eq!(
        classify_charge(&answer(429, json!({"error": {"code": "rate_limit"}}))),
        Outcome::NotExecuted {
            reason: Reason::Http(429)
        }
    );
    assert_eq!(
        classify_charge(&answer(500, Value::Null)),
        Outcome::Unknown {
            reason: Reason::Http(500),
            escalate: false
        }
    );
    assert_eq!(
        classify_charge(&CallResult::NoAnswer {
            kind: NoAnswerKind::Timeout
        }),
        Outcome::Unknown {
            reason: Reason::Timeout,
            escalate: false
        }
    );
}

#[test]
fn only_payment_intents_carrying_the_operation_count() {
    let other = json!({"id": "pi_2", "object": "payment_intent", "status": "succeeded",
                       "metadata": {"fleet_operation": "op_B"}});
    let read = read_payment_intents("op_A", "metadata", &[intent("succeeded"), other]);
    assert_eq!(
        read.lookup,
        Lookup::Matches(vec![Found::Succeeded {
            external_id: "pi_1".into()
        }])
    );
    assert_eq!(
        read_payment_intents("op_C", "metadata", &[intent("succeeded")]).lookup,
        Lookup::Matches(vec![])
    );
}

fn at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap()
}

fn payer(customer_of_pm: Option<&str>, last4: &str) -> Value {
    json!({
        "customer": {"id": "cus_1", "object": "customer", "name": "Jane Doe", "email": "jane@example.com"},
        "payment_method": {"id": "pm_1", "object": "payment_method", "type": "card",
            "customer": customer_of_pm,
            "card": {"brand": "visa", "last4": last4, "country": "FR", "fingerprint": "Xt5EWLLDS7FJjR1c"}}
    })
}

#[test]
fn the_payer_is_the_customers_card_as_stripe_describes_it() {
    let evidence = payer_evidence("cus_1", "pm_1", &payer(Some("cus_1"), "4242"), at()).unwrap();
    let found = evidence.found().unwrap();
    assert_eq!(found.id, "pm_1");
    assert_eq!(found.name, "Jane Doe <jane@example.com>");
    assert_eq!(found.country, "FR");
    assert_eq!(found.account.scheme, "card");
    assert_eq!(found.account.masked, "Visa •••• 4242");
    assert!(found.account.fingerprint.starts_with("sha256:"));
    assert_eq!(found.account.fingerprint.len(), 7 + 64);
    // The evidence round-trips as every payee's does.
    assert_eq!(
        PayeeEvidence::from_json(&evidence.to_json()),
        Some(evidence.clone())
    );
    assert!(same_payer(&evidence, &Ok(evidence.clone())));

    assert_eq!(
        payer_evidence("cus_1", "pm_1", &payer(None, "4242"), at()),
        Err(PayerRefusal::NotCustomers)
    );
    assert_eq!(
        payer_evidence("cus_1", "pm_1", &payer(Some("cus_2"), "4242"), at()),
        Err(PayerRefusal::NotCustomers)
    );
    let mut gone = payer(Some("cus_1"), "4242");
    gone["customer"] = Value::Null;
    assert_eq!(
        payer_evidence("cus_1", "pm_1", &gone, at()),
        Err(PayerRefusal::CustomerUnknown)
    );
    gone["customer"] = json!({"id": "cus_1", "object": "customer", "deleted": true});
    assert_eq!(
        payer_evidence("cus_1", "pm_1", &gone, at()),
        Err(PayerRefusal::CustomerUnknown)
    );
    let mut no_pm = payer(Some("cus_1"), "4242");
    no_pm["payment_method"] = Value::Null;
    assert_eq!(
        payer_evidence("cus_1", "pm_1", &no_pm, at()),
        Err(PayerRefusal::PaymentMethodUnknown)
    );
    let mut odd = payer(Some("cus_1"), "4242");
    odd["payment_method"]["card"]["last4"] = json!("42");
    assert!(matches!(
        payer_evidence("cus_1", "pm_1", &odd, at()),
        Ok(PayeeEvidence::Unknown {
            reason: UnknownPayee::LookupFailed,
            ..
        })
    ));
}

#[test]
fn a_detached_or_other_card_is_not_the_approved_payer() {
    let approved = payer_evidence("cus_1", "pm_1", &payer(Some("cus_1"), "4242"), at()).unwrap();
    let detached = payer_evidence("cus_1", "pm_1", &payer(None, "4242"), at());
    assert!(!same_payer(&approved, &detached));
    let other_card = payer_evidence("cus_1", "pm_1", &payer(Some("cus_1"), "1881"), at());
    assert!(!same_payer(&approved, &other_card));
    let mut renamed = payer(Some("cus_1"), "4242");
    renamed["customer"]["name"] = json!("Jane Smith");
    let renamed = payer_evidence("cus_1", "pm_1", &renamed, at());
    assert!(
        same_payer(&approved, &renamed),
        "a new name is the same card"
    );
}

#[test]
fn cards_sources_and_bank_accounts_are_described() {
    let card = json!({"customer": {"id": "cus_1", "object": "customer", "email": "a@b.c"},
        "payment_method": {"id": "card_1", "object": "card", "customer": "cus_1",
                           "brand": "American Express", "last4": "0005", "fingerprint": "f1"}});
    let found = payer_evidence("cus_1", "card_1", &card, at()).unwrap();
    let found = found.found().unwrap();
    assert_eq!(found.account.masked, "American Express •••• 0005");
    assert_eq!(found.country, "ZZ");
    assert_eq!(found.name, "a@b.c");
    let sepa = json!({"customer": {"id": "cus_1", "object": "customer"},
        "payment_method": {"id": "pm_2", "object": "payment_method", "type": "sepa_debit",
            "customer": "cus_1",
            "sepa_debit": {"country": "DE", "last4": "3000", "fingerprint": "f2", "bank_code": "37040044"}}});
    let found = payer_evidence("cus_1", "pm_2", &sepa, at()).unwrap();
    let found = found.found().unwrap();
    assert_eq!(found.account.scheme, "bank");
    assert_eq!(found.account.masked, "bank account •••• 3000");
    assert_eq!(found.name, "cus_1");
}

#[test]
fn the_agent_is_told_what_a_decline_means() {
    assert!(failure_in_words(AUTHENTICATION_REQUIRED)
        .unwrap()
        .starts_with("the customer must authenticate"));
    assert!(failure_in_words("card_declined").is_some());
    assert_eq!(failure_in_words("amount_too_large"), None);
}
