use std::path::Path;

use serde_json::json;

use super::*;

/// The policy files the repository ships, as the loader reads them.
fn shipped() -> PolicySet {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies");
    let files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            (
                p.file_stem().unwrap().to_str().unwrap().to_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    PolicySet::parse(files.iter().map(|(n, t)| (n.as_str(), t.as_str()))).unwrap()
}

fn payment(amount_minor: i64, currency: &str) -> Value {
    json!({"invoice_id": "inv_1", "beneficiary_id": "vendor_77", "amount_minor": amount_minor, "currency": currency})
}

#[test]
fn the_shipped_policies_cover_every_version_the_fleet_uses() {
    let set = shipped();
    assert_eq!(
        set.versions().collect::<Vec<_>>(),
        [
            "charges-v1",
            "charges-v2",
            "contracts-v1",
            "crm-v1",
            "orders-v1",
            "payments-v3",
            "payments-v4",
            "payments-v5",
            "refunds-v1"
        ]
    );
    // charges-v2 asks of a flagged charge what payments-v4 asks of a flagged payment;
    // charges-v1 shows the cues and asks nothing more.
    let charge_risk = set.risk("charges-v2", Action::ChargeCreate);
    assert_eq!(charge_risk.requirement(true, 1, 0), (2, 1));
    assert_eq!(charge_risk.median_multiple, 3);
    assert_eq!(
        set.risk("charges-v1", Action::ChargeCreate)
            .requirement(true, 1, 0),
        (1, 0)
    );
    // payments-v4: a flagged payment needs one approver more, one approval signed.
    let risk = set.risk("payments-v4", Action::PaymentCreate);
    assert_eq!(risk.requirement(true, 1, 0), (2, 1));
    assert_eq!(risk.requirement(false, 1, 0), (1, 0));
    assert_eq!(risk.requirement(true, 2, 2), (3, 2));
    // Without a risk table the cues change nothing.
    assert_eq!(
        set.risk("payments-v3", Action::PaymentCreate)
            .requirement(true, 1, 0),
        (1, 0)
    );
    let refund = json!({"payment_id": "pay_1", "amount_minor": 500_000_000, "currency": "KZT", "reason": "r"});
    let deal = json!({"name": "n", "amount_minor": 990_000, "currency": "EUR", "stage": "s", "owner_id": "u"});
    let update = json!({"expected_version": 3, "patch": {"stage": "won"}});
    let order = json!({"from": "paid", "to": "fulfilled", "reason": "shipped"});
    for (version, action, payload) in [
        ("refunds-v1", Action::RefundCreate, refund),
        ("crm-v1", Action::CrmDealCreate, deal),
        ("crm-v1", Action::CrmDealUpdate, update),
        ("orders-v1", Action::OrderStatusChange, order),
    ] {
        let required = set.amount_requirement(version, action, &payload);
        assert_eq!(required.map(|r| r.approvers), Ok(1), "{version} {action:?}");
    }
}

#[test]
fn a_kzt_payment_of_a_million_or_more_needs_two_approvers() {
    let set = shipped();
    let required = |amount, currency| {
        set.amount_requirement(
            "payments-v3",
            Action::PaymentCreate,
            &payment(amount, currency),
        )
        .map(|r| r.approvers)
    };
    assert_eq!(required(1_250_000, "KZT"), Ok(1), "the seed: 12,500.00 KZT");
    assert_eq!(required(99_999_999, "KZT"), Ok(1), "999,999.99 KZT");
    assert_eq!(required(100_000_000, "KZT"), Ok(2), "1,000,000.00 KZT");
    assert_eq!(required(MAX_SAFE_INTEGER, "KZT"), Ok(2));
    // The band is KZT's: the same digits in another currency are another amount, judged
    // by that currency's own bands.
    assert_eq!(required(999_999, "USD"), Ok(1), "9,999.99 USD");
    assert_eq!(required(100_000_000, "USD"), Ok(2), "1,000,000.00 USD");
}

#[test]
fn a_currency_the_policy_has_no_bands_for_is_refused_never_given_the_lowest_quorum() {
    let set = shipped();
    for version in ["payments-v3", "payments-v4"] {
        let required = |amount, currency| {
            set.amount_requirement(version, Action::PaymentCreate, &payment(amount, currency))
                .map(|r| r.approvers)
        };
        // 9,000,000,000.00 in each currency the policy bands asks at least what the same
        // figure asks in KZT.
        let kzt = required(900_000_000_000, "KZT").unwrap();
        for currency in ["USD", "EUR", "GBP", "CHF", "JPY", "KWD", "RUB", "CNY"] {
            assert!(
                required(900_000_000_000, currency).unwrap() >= kzt,
                "{version} {currency}"
            );
        }
        assert_eq!(
            required(1, "AED"),
            Err(PolicyRefusal::CurrencyNotBanded),
            "{version}"
        );
    }
    assert_eq!(
        PolicyRefusal::CurrencyNotBanded.reason(),
        "currency_not_banded"
    );
    assert_eq!(PolicyRefusal::CurrencyNotBanded.field(), "payload.currency");
    // An action without bands needs the same quorum in any currency.
    let refund =
        json!({"payment_id": "pay_1", "amount_minor": 5, "currency": "AED", "reason": "r"});
    assert_eq!(
        set.amount_requirement("refunds-v1", Action::RefundCreate, &refund)
            .map(|r| r.approvers),
        Ok(1)
    );
}

#[test]
fn the_policy_in_force_by_default_is_what_in_force_says_or_the_only_one() {
    let set = shipped();
    assert_eq!(
        set.default_in_force(Action::PaymentCreate),
        Some("payments-v3")
    );
    assert_eq!(
        set.default_in_force(Action::RefundCreate),
        Some("refunds-v1")
    );
    assert_eq!(set.default_in_force(Action::CrmDealUpdate), Some("crm-v1"));
    let two = "policy_version = \"a\"\n[actions.\"refund.create\"]\napprovers = 1\n";
    let other = "policy_version = \"b\"\n[actions.\"refund.create\"]\napprovers = 2\n";
    let ambiguous = PolicySet::parse([("a", two), ("b", other)]).unwrap();
    assert_eq!(ambiguous.default_in_force(Action::RefundCreate), None);
    let chosen = PolicySet::parse([
        ("a", two),
        ("b", other),
        (IN_FORCE_FILE, "[in_force]\n\"refund.create\" = \"b\"\n"),
    ])
    .unwrap();
    assert_eq!(chosen.default_in_force(Action::RefundCreate), Some("b"));
    for (file, problem) in [
        ("[in_force]\n\"refund.create\" = \"c\"\n", "no policy"),
        ("[in_force]\n\"payment.create\" = \"a\"\n", "does not name"),
        ("[in_force]\n\"refund.delete\" = \"a\"\n", "unknown action"),
    ] {
        let err = PolicySet::parse([("a", two), ("b", other), (IN_FORCE_FILE, file)]).unwrap_err();
        assert!(err.problem.contains(problem), "{err}");
    }
}

#[test]
fn the_floor_is_the_amounts_requirement_raised_by_the_risk_table() {
    let set = shipped();
    let v4 = set.policy("payments-v4").unwrap();
    let at = |amount, flagged| v4.floor(Action::PaymentCreate, &payment(amount, "KZT"), flagged);
    assert_eq!(
        at(1, false),
        Ok(Requirement {
            approvers: 1,
            signed: 0
        })
    );
    assert_eq!(
        at(1, true),
        Ok(Requirement {
            approvers: 2,
            signed: 1
        })
    );
    assert_eq!(
        at(100_000_000, true),
        Ok(Requirement {
            approvers: 3,
            signed: 2
        })
    );
    let rules = v4.rules();
    assert_eq!(rules["payment.create"]["bands"]["KZT"][0]["approvers"], 2);
    assert_eq!(rules["payment.create"]["risk"]["extra_approvers"], 1);
}

#[test]
fn an_unknown_version_or_an_action_it_does_not_name_is_refused() {
    let set = shipped();
    assert_eq!(
        set.amount_requirement("payments-v2", Action::PaymentCreate, &payment(1, "KZT"))
            .map(|r| r.approvers),
        Err(PolicyRefusal::UnknownPolicy)
    );
    assert_eq!(
        set.amount_requirement("payments-v3", Action::RefundCreate, &payment(1, "KZT"))
            .map(|r| r.approvers),
        Err(PolicyRefusal::ActionNotInPolicy)
    );
    for refusal in [
        PolicyRefusal::UnknownPolicy,
        PolicyRefusal::ActionNotInPolicy,
    ] {
        assert_eq!(refusal.reason(), "unknown_policy");
    }
    assert_eq!(PolicyRefusal::UnknownPolicy.field(), "policy_version");
    assert_eq!(PolicyRefusal::ActionNotInPolicy.field(), "action");
}

#[test]
fn the_highest_band_at_or_below_the_amount_applies() {
    let text = r#"
        policy_version = "tiers"
        [actions."payment.create"]
        approvers = 1
        [[actions."payment.create".bands]]
        currency = "EUR"
        from_amount_minor = 5000000
        approvers = 3
        [[actions."payment.create".bands]]
        currency = "EUR"
        from_amount_minor = 100000
        approvers = 2
    "#;
    let policy = Policy::parse("tiers", text).unwrap();
    let required = |amount| {
        policy
            .amount_requirement(Action::PaymentCreate, &payment(amount, "EUR"))
            .map(|r| r.approvers)
    };
    assert_eq!(required(99_999), Ok(1));
    assert_eq!(required(100_000), Ok(2));
    assert_eq!(required(4_999_999), Ok(2));
    assert_eq!(required(5_000_000), Ok(3));
    assert_eq!(
        policy
            .amount_requirement(Action::RefundCreate, &payment(1, "EUR"))
            .map(|r| r.approvers),
        Err(PolicyRefusal::ActionNotInPolicy)
    );
}

#[test]
fn a_policy_file_that_could_mislead_is_refused_with_what_is_wrong() {
    let action =
        |body: &str| format!("policy_version = \"p\"\n[actions.\"payment.create\"]\n{body}");
    let band = |currency: &str, from: i64, approvers: u8| {
        format!("[[actions.\"payment.create\".bands]]\ncurrency = \"{currency}\"\nfrom_amount_minor = {from}\napprovers = {approvers}\n")
    };
    let cases: Vec<(String, &str)> = vec![
        ("policy_version = \"q\"\n[actions.\"payment.create\"]\napprovers = 1".into(), "named after its version"),
        ("policy_version = \"p\"\nactions = {}".into(), "names no action"),
        ("policy_version = \"p\"".into(), "missing field"),
        ("policy_version = \"p\"\n[actions.\"payment.delete\"]\napprovers = 1".into(), "unknown action"),
        (action("approvers = 0"), "approvers must be 1 to 10"),
        (action("approvers = 11"), "approvers must be 1 to 10"),
        (action("approvers = 1\nquorum = 2"), "unknown field"),
        (action(&format!("approvers = 1\n{}", band("KZ", 1, 2))), "not an ISO 4217 currency"),
        (action(&format!("approvers = 1\n{}", band("KZT", 0, 2))), "from_amount_minor must be 1"),
        (action(&format!("approvers = 1\n{}", band("KZT", 10, 0))), "approvers must be 1 to 10"),
        (action(&format!("approvers = 1\n{}{}", band("KZT", 10, 2), band("KZT", 10, 3))), "start at the same amount"),
        (action(&format!("approvers = 2\n{}", band("KZT", 10, 1))), "fewer approvers"),
        (action(&format!("approvers = 1\n{}{}", band("KZT", 10, 3), band("KZT", 20, 2))), "fewer approvers"),
        (
            "policy_version = \"p\"\n[actions.\"crm.deal.update\"]\napprovers = 1\n[[actions.\"crm.deal.update\".bands]]\ncurrency = \"EUR\"\nfrom_amount_minor = 1\napprovers = 2".to_owned(),
            "has no amount",
        ),
        ("policy_version = \"p\"\n[actions.\"payment.create\"\napprovers = 1".into(), "TOML parse error"),
    ];
    for (text, expected) in cases {
        let err = Policy::parse("p", &text).expect_err(&text);
        assert_eq!(err.source_name, "p");
        assert!(err.to_string().contains(expected), "{text}\n→ {err}");
    }
}

#[test]
fn progress_reads_as_received_of_required() {
    let half = Quorum {
        received: 1,
        required: 2,
    };
    assert_eq!(half.to_string(), "1 of 2");
    assert!(!half.is_met());
    assert!(Quorum {
        received: 2,
        required: 2
    }
    .is_met());
}

#[test]
fn a_kzt_payment_of_a_million_or_more_needs_two_signed_approvals() {
    let set = shipped();
    let signed = |amount| {
        set.amount_requirement(
            "payments-v3",
            Action::PaymentCreate,
            &payment(amount, "KZT"),
        )
        .map(|r| r.signed)
    };
    assert_eq!(signed(1_250_000), Ok(0));
    assert_eq!(signed(99_999_999), Ok(0));
    assert_eq!(signed(100_000_000), Ok(2));
    assert_eq!(signed(150_000_000), Ok(2));
    let refund =
        json!({"payment_id": "pay_1", "amount_minor": 5, "currency": "KZT", "reason": "r"});
    assert_eq!(
        set.amount_requirement("refunds-v1", Action::RefundCreate, &refund)
            .map(|r| r.signed),
        Ok(0)
    );
    assert_eq!(
        set.amount_requirement("payments-v9", Action::PaymentCreate, &refund)
            .map(|r| r.signed),
        Err(PolicyRefusal::UnknownPolicy)
    );
}

#[test]
fn signed_approvals_are_bounded_and_never_fewer_for_more() {
    let parse = |text: &str| Policy::parse("p", text);
    let ok = parse(
        "policy_version = \"p\"\n[actions.\"payment.create\"]\napprovers = 2\nsigned_approvals = 1\n\
         [[actions.\"payment.create\".bands]]\ncurrency = \"KZT\"\nfrom_amount_minor = 100\napprovers = 3\n",
    )
    .unwrap();
    // A band without its own count takes the action's.
    assert_eq!(
        ok.amount_requirement(Action::PaymentCreate, &payment(100, "KZT"))
            .map(|r| r.signed),
        Ok(1)
    );
    let more_than_approvers = parse(
        "policy_version = \"p\"\n[actions.\"payment.create\"]\napprovers = 1\nsigned_approvals = 2\n",
    )
    .unwrap_err();
    assert!(
        more_than_approvers.problem.contains("exceed"),
        "{more_than_approvers}"
    );
    let fewer_for_more = parse(
        "policy_version = \"p\"\n[actions.\"payment.create\"]\napprovers = 2\nsigned_approvals = 2\n\
         [[actions.\"payment.create\".bands]]\ncurrency = \"KZT\"\nfrom_amount_minor = 100\napprovers = 2\nsigned_approvals = 1\n",
    )
    .unwrap_err();
    assert!(
        fewer_for_more.problem.contains("fewer signed"),
        "{fewer_for_more}"
    );
}

#[test]
fn payments_refuse_an_unknown_payee_unless_the_policy_asks_for_more_approvers() {
    assert_eq!(
        shipped().unknown_payee("payments-v3", Action::PaymentCreate),
        Ok(UnknownPayeeRule::Refuse)
    );
    let text = |rule: &str| {
        format!(
            "policy_version = \"p\"\n[actions.\"payment.create\"]\napprovers = 1\n{rule}\n\
             [[actions.\"payment.create\".bands]]\ncurrency = \"KZT\"\nfrom_amount_minor = 100000000\napprovers = 3\n"
        )
    };
    let open = Policy::parse(
        "p",
        &text("unknown_payee = \"approve\"\nunknown_payee_approvers = 2"),
    )
    .unwrap();
    let rule = open.unknown_payee(Action::PaymentCreate).unwrap();
    assert_eq!(rule, UnknownPayeeRule::Approvers(2));
    assert_eq!(rule.approvers(1), Some(2));
    // The amount's quorum when it is larger.
    assert_eq!(rule.approvers(3), Some(3));
    assert_eq!(UnknownPayeeRule::Refuse.approvers(1), None);
    let default = Policy::parse("p", &text("")).unwrap();
    assert_eq!(
        default.unknown_payee(Action::PaymentCreate),
        Some(UnknownPayeeRule::Refuse)
    );
    for wrong in [
        "unknown_payee = \"approve\"",
        "unknown_payee = \"approve\"\nunknown_payee_approvers = 11",
        "unknown_payee = \"refuse\"\nunknown_payee_approvers = 2",
        "unknown_payee = \"ignore\"",
    ] {
        assert!(Policy::parse("p", &text(wrong)).is_err(), "{wrong}");
    }
    let refund = "policy_version = \"r\"\n[actions.\"refund.create\"]\napprovers = 1\nunknown_payee = \"refuse\"\n";
    assert!(
        Policy::parse("r", refund).is_err(),
        "a refund names no payee"
    );
}

#[test]
fn a_risk_table_is_for_payments_and_charges_and_bounded() {
    let parse = |text: &str| Policy::parse("p", text);
    let base = "policy_version = \"p\"\n";
    assert!(parse(&format!(
        "{base}[actions.\"payment.create\"]\napprovers = 1\n[actions.\"payment.create\".risk]\nextra_approvers = 1\n"
    ))
    .is_ok());
    assert!(parse(&format!(
        "{base}[actions.\"charge.create\"]\napprovers = 1\n[actions.\"charge.create\".risk]\nextra_approvers = 1\n"
    ))
    .is_ok());
    assert!(parse(&format!(
        "{base}[actions.\"refund.create\"]\napprovers = 1\n[actions.\"refund.create\".risk]\nextra_approvers = 1\n"
    ))
    .is_err());
    assert!(parse(&format!(
        "{base}[actions.\"payment.create\"]\napprovers = 1\n[actions.\"payment.create\".risk]\nmedian_multiple = 0\n"
    ))
    .is_err());
    assert!(parse(&format!(
        "{base}[actions.\"payment.create\"]\napprovers = 1\n[actions.\"payment.create\".risk]\nextra = 1\n"
    ))
    .is_err());
    // Never more than the most approvers a policy may ask, and never more signed
    // approvals than approvers.
    let rule = RiskRule {
        extra_approvers: 10,
        signed_approvals: 3,
        median_multiple: 3,
    };
    assert_eq!(rule.requirement(true, 5, 0), (MAX_APPROVERS, 3));
}

#[test]
fn an_object_the_fleet_has_no_record_of_is_refused_unless_the_policy_asks_for_more_approvers() {
    // The shipped policies accept such objects with the quorum they ask anyway (see
    // docs/policies.md): orders, and most payments and deals, are made outside the fleet.
    for (version, action) in [
        ("refunds-v1", Action::RefundCreate),
        ("crm-v1", Action::CrmDealUpdate),
        ("orders-v1", Action::OrderStatusChange),
    ] {
        assert_eq!(
            shipped().foreign_object(version, action),
            Ok(ForeignObjectRule::Approvers(1)),
            "{version}"
        );
    }
    let text = |rule: &str| {
        format!("policy_version = \"r\"\n[actions.\"refund.create\"]\napprovers = 1\n{rule}\n")
    };
    let default = Policy::parse("r", &text("")).unwrap();
    assert_eq!(
        default.foreign_object(Action::RefundCreate),
        Some(ForeignObjectRule::Refuse)
    );
    let open = Policy::parse(
        "r",
        &text("foreign_object = \"approve\"\nforeign_object_approvers = 2"),
    )
    .unwrap();
    assert_eq!(
        open.foreign_object(Action::RefundCreate)
            .unwrap()
            .approvers(1),
        Some(2)
    );
    for wrong in [
        "foreign_object = \"approve\"",
        "foreign_object = \"approve\"\nforeign_object_approvers = 0",
        "foreign_object = \"refuse\"\nforeign_object_approvers = 2",
        "foreign_object = \"trust\"",
    ] {
        assert!(Policy::parse("r", &text(wrong)).is_err(), "{wrong}");
    }
    let payment = "policy_version = \"p\"\n[actions.\"payment.create\"]\napprovers = 1\nforeign_object = \"refuse\"\n";
    assert!(
        Policy::parse("p", payment).is_err(),
        "a payment names no provider object"
    );
}

#[test]
fn mandates_are_never_unless_a_policy_of_one_approver_says_below_bands() {
    let base = r#"policy_version = "p"
[actions."payment.create"]
approvers = 1
"#;
    let never = Policy::parse("p", base).unwrap();
    assert_eq!(never.mandates(Action::PaymentCreate), MandateRule::Never);
    assert!(never.rules()["payment.create"].get("mandates").is_none());
    let below = Policy::parse("p", &format!("{base}mandates = \"below_bands\"\n")).unwrap();
    assert_eq!(
        below.mandates(Action::PaymentCreate),
        MandateRule::BelowBands
    );
    assert_eq!(below.rules()["payment.create"]["mandates"], "below_bands");
    let two = r#"policy_version = "p"
[actions."payment.create"]
approvers = 2
mandates = "below_bands"
"#;
    assert!(
        Policy::parse("p", two).is_err(),
        "a mandate stands in for one approver"
    );
    let no_payee = r#"policy_version = "p"
[actions."crm.deal.update"]
approvers = 1
mandates = "below_bands"
"#;
    assert!(Policy::parse("p", no_payee).is_err());
    assert!(Policy::parse("p", &format!("{base}mandates = \"always\"\n")).is_err());
}
