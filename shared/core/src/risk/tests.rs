use super::*;

fn paid(to: &str, amount_minor: i64, fingerprint: &str) -> PastPayment {
    PastPayment {
        beneficiary_id: to.to_owned(),
        amount_minor,
        currency: "KZT".to_owned(),
        account_fingerprint: Some(fingerprint.to_owned()),
    }
}

fn verified(fingerprint: &str) -> PayeeNow {
    PayeeNow {
        known: true,
        verified: Some(true),
        account_fingerprint: Some(fingerprint.to_owned()),
    }
}

fn asked(amount_minor: i64) -> PaymentAsked<'static> {
    PaymentAsked {
        operation_id: "op_new",
        supersedes: None,
        beneficiary_id: "vendor_77",
        invoice_id: "inv_9182",
        amount_minor,
        currency: "KZT",
    }
}

#[test]
fn a_usual_payment_to_a_known_verified_payee_has_no_cue() {
    let history = [
        paid("vendor_77", 1_000_000, "sha256:a"),
        paid("vendor_77", 1_200_000, "sha256:a"),
    ];
    assert_eq!(
        cues(asked(1_250_000), &verified("sha256:a"), &history, 3),
        []
    );
}

#[test]
fn a_first_payment_is_flagged_for_the_payee_and_the_account() {
    assert_eq!(
        cues(asked(1_250_000), &verified("sha256:a"), &[], 3),
        [RiskCue::FirstPaymentToPayee, RiskCue::FirstPaymentToAccount]
    );
    // The account was paid before, under another payee: only the payee is new.
    let history = [paid("vendor_12", 500, "sha256:a")];
    assert_eq!(
        cues(asked(1_250_000), &verified("sha256:a"), &history, 3),
        [RiskCue::FirstPaymentToPayee]
    );
}

#[test]
fn an_account_changed_since_the_last_payment_is_flagged() {
    let history = [paid("vendor_77", 1_000_000, "sha256:old")];
    assert_eq!(
        cues(asked(1_000_000), &verified("sha256:new"), &history, 3),
        [
            RiskCue::FirstPaymentToAccount,
            RiskCue::AccountChangedSinceLastPayment
        ]
    );
    // Changed back to an account paid before: the last payment decides.
    let history = [
        paid("vendor_77", 1_000_000, "sha256:new"),
        paid("vendor_77", 1_000_000, "sha256:old"),
    ];
    assert_eq!(
        cues(asked(1_000_000), &verified("sha256:new"), &history, 3),
        [RiskCue::AccountChangedSinceLastPayment]
    );
}

#[test]
fn an_amount_far_above_the_payees_median_is_flagged() {
    let history = [
        paid("vendor_77", 100_000, "sha256:a"),
        paid("vendor_77", 120_000, "sha256:a"),
        paid("vendor_77", 9_000_000, "sha256:a"),
    ];
    // Median 120,000: up to 3× is usual.
    assert_eq!(cues(asked(360_000), &verified("sha256:a"), &history, 3), []);
    assert_eq!(
        cues(asked(360_001), &verified("sha256:a"), &history, 3),
        [RiskCue::AmountAboveUsual {
            multiple: 3,
            median_minor: 120_000
        }]
    );
    // Another currency's payments say nothing about this one.
    let usd = PastPayment {
        currency: "USD".to_owned(),
        ..paid("vendor_77", 1, "sha256:a")
    };
    assert_eq!(cues(asked(360_001), &verified("sha256:a"), &[usd], 3), []);
}

#[test]
fn an_unverified_or_unknown_payee_is_flagged() {
    let history = [paid("vendor_77", 1_000_000, "sha256:a")];
    let unverified = PayeeNow {
        verified: Some(false),
        ..verified("sha256:a")
    };
    assert_eq!(
        cues(asked(1_000_000), &unverified, &history, 3),
        [RiskCue::UnverifiedPayee]
    );
    assert_eq!(
        cues(asked(1_000_000), &PayeeNow::default(), &history, 3),
        [RiskCue::UnknownPayee]
    );
    // A provider without a directory: nothing to say about the payee itself.
    let silent = PayeeNow {
        known: true,
        ..PayeeNow::default()
    };
    assert_eq!(cues(asked(1_000_000), &silent, &history, 3), []);
}

#[test]
fn cues_are_stored_as_stable_codes_and_said_in_words() {
    let cue = RiskCue::AmountAboveUsual {
        multiple: 3,
        median_minor: 120_000,
    };
    assert_eq!(
        serde_json::to_value(&cue).unwrap(),
        serde_json::json!({"cue": "amount_above_usual", "multiple": 3, "median_minor": 120000})
    );
    assert_eq!(
        serde_json::to_value(RiskCue::FirstPaymentToPayee).unwrap(),
        serde_json::json!({"cue": "first_payment_to_payee"})
    );
    assert_eq!(
        cue.in_words("KZT"),
        "more than 3× this payee's usual amount (1,200.00 KZT)"
    );
}
