use chrono::TimeZone;
use serde_json::json;

use super::*;

const FP: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

fn mandate(id: &str, payees: Value, for_principal: Value) -> Mandate {
    let mut statement = crate::mandate::tests::statement();
    statement["mandate_id"] = json!(id);
    statement["payees"] = payees;
    statement["for_principal"] = for_principal;
    Mandate::from_json(&statement).unwrap()
}

fn listed() -> Mandate {
    mandate(
        "md_01JF0000000000000000000001",
        json!([{"id": "vendor_77", "account_fingerprint": FP}]),
        json!("billing-bot"),
    )
}

fn standing(spent: i64, used: i64, revoked: bool) -> MandateStanding {
    MandateStanding {
        budget_minor: 3_000_000,
        spent_minor: spent,
        count_limit: 40,
        used_count: used,
        revoked,
    }
}

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 10, 12, 0, 0).unwrap()
}

fn subject(amount: i64, payee: &'static str) -> Subject<'static> {
    Subject {
        tenant_id: "org_482",
        action: Action::PaymentCreate,
        amount_minor: Some(amount),
        currency: Some("KZT"),
        submitted_by: Some("billing-bot"),
        payee: PayeeFacts::Named(payee),
    }
}

fn rule() -> Value {
    json!({"approvers": 1, "mandates": "below_bands",
           "bands": {"KZT": [{"from_amount_minor": 1_000_000, "approvers": 2}]}})
}

fn reason(c: &Coverage) -> &'static str {
    match c {
        Coverage::NotCovered { reason, .. } => reason,
        Coverage::Covered { .. } => "covered",
    }
}

#[test]
fn a_listed_payee_within_every_limit_is_covered_with_what_is_left_after() {
    let m = [(listed(), standing(100_000, 3, false))];
    let c = coverage(&m, Some(&rule()), &subject(120_000, "vendor_77"), now());
    assert_eq!(
        c,
        Coverage::Covered {
            mandate_id: "md_01JF0000000000000000000001".to_owned(),
            available_after_minor: 3_000_000 - 100_000 - 120_000,
            count_left_after: 36,
            conditions: vec![
                "payee_account_as_signed_at_intake",
                "no_risk_cue_at_intake",
                "one_approver_at_intake"
            ],
        }
    );
    assert_eq!(c.to_json()["covered"], json!(true));
}

#[test]
fn each_reason_is_named() {
    let r = Some(rule());
    let ask = |st: MandateStanding, s: Subject<'static>, at: DateTime<Utc>| {
        reason(&coverage(&[(listed(), st)], r.as_ref(), &s, at))
    };
    let fresh = standing(0, 0, false);
    assert_eq!(
        ask(fresh, subject(200_000, "vendor_77"), now()),
        "above_per_operation_max"
    );
    assert_eq!(
        ask(fresh, subject(1_000, "vendor_99"), now()),
        "payee_not_allowed"
    );
    assert_eq!(
        ask(
            standing(2_950_000, 1, false),
            subject(60_000, "vendor_77"),
            now()
        ),
        "over_remaining_budget"
    );
    assert_eq!(
        ask(standing(10, 40, false), subject(60_000, "vendor_77"), now()),
        "over_remaining_count"
    );
    assert_eq!(
        ask(standing(0, 0, true), subject(1_000, "vendor_77"), now()),
        "revoked"
    );
    let later = Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0).unwrap();
    assert_eq!(
        ask(fresh, subject(1_000, "vendor_77"), later),
        "outside_window"
    );
    let mut eur = subject(1_000, "vendor_77");
    eur.currency = Some("EUR");
    assert_eq!(ask(fresh, eur, now()), "other_currency");
    let mut refund = subject(1_000, "vendor_77");
    refund.action = Action::RefundCreate;
    assert_eq!(ask(fresh, refund, now()), NONE_ACTIVE);
    // Another agent's mandate is none of this one's.
    let mut other = subject(1_000, "vendor_77");
    other.submitted_by = Some("support-bot");
    assert_eq!(ask(fresh, other, now()), NONE_ACTIVE);
    assert_eq!(
        reason(&coverage(&[], r.as_ref(), &subject(1, "vendor_77"), now())),
        NONE_ACTIVE
    );
}

#[test]
fn the_policy_in_force_may_forbid_what_a_mandate_would_approve() {
    let m = [(
        mandate(
            "md_01JF0000000000000000000002",
            json!("any_verified"),
            json!(null),
        ),
        standing(0, 0, false),
    )];
    let s = subject(100_000, "vendor_1");
    let never = json!({"approvers": 1, "bands": {}});
    assert_eq!(
        reason(&coverage(&m, Some(&never), &s, now())),
        "policy_allows_no_mandate"
    );
    assert_eq!(reason(&coverage(&m, None, &s, now())), "no_policy_in_force");
    let low_band = json!({"approvers": 1, "mandates": "below_bands",
                          "bands": {"KZT": [{"from_amount_minor": 50_000}]}});
    let above = coverage(&m, Some(&low_band), &s, now());
    assert_eq!(reason(&above), "policy_band_needs_a_person");
    assert_eq!(above.to_json()["from_amount_minor"], json!(50_000));
    let eur_only = json!({"approvers": 1, "mandates": "below_bands",
                          "bands": {"EUR": [{"from_amount_minor": 50_000_000}]}});
    assert_eq!(
        reason(&coverage(&m, Some(&eur_only), &s, now())),
        "policy_band_needs_a_person"
    );
    let covered = coverage(&m, Some(&rule()), &s, now());
    assert!(
        matches!(&covered, Coverage::Covered { conditions, .. } if conditions[0] == "payee_verified_at_intake"),
        "{covered:?}"
    );
}

#[test]
fn the_mandate_ending_soonest_is_used_first_as_at_claim() {
    let later = mandate(
        "md_01JF0000000000000000000003",
        json!("any_verified"),
        json!(null),
    );
    let mut sooner = listed();
    sooner.valid_until = Utc.with_ymd_and_hms(2026, 12, 20, 0, 0, 0).unwrap();
    let m = [
        (later, standing(0, 0, false)),
        (sooner, standing(0, 0, false)),
    ];
    let c = coverage(&m, Some(&rule()), &subject(1_000, "vendor_77"), now());
    assert!(
        matches!(&c, Coverage::Covered { mandate_id, .. } if mandate_id == "md_01JF0000000000000000000001"),
        "{c:?}"
    );
}

#[test]
fn a_found_payee_is_judged_by_its_account_and_verification() {
    let m = listed();
    let mut s = subject(1_000, "vendor_77");
    s.payee = PayeeFacts::Found {
        id: "vendor_77",
        fingerprint: FP,
        verified: false,
    };
    assert_eq!(m.first_gap(&s), None);
    s.payee = PayeeFacts::Found {
        id: "vendor_77",
        fingerprint: "sha256:b",
        verified: true,
    };
    assert_eq!(m.first_gap(&s), Some(Gap::PayeeNotAllowed));
    let any = mandate(
        "md_01JF0000000000000000000004",
        json!("any_verified"),
        json!(null),
    );
    s.payee = PayeeFacts::Found {
        id: "x",
        fingerprint: FP,
        verified: false,
    };
    assert_eq!(any.first_gap(&s), Some(Gap::PayeeNotAllowed));
    s.payee = PayeeFacts::Unknown;
    assert_eq!(any.first_gap(&s), Some(Gap::PayeeNotAllowed));
}
