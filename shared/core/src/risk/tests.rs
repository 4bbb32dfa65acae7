use super::*;

/// A payee paid `payments` times, last on `last`, whose account was paid `to_account` times,
/// with these latest amounts.
fn paid(payments: u64, last: &str, to_account: u64, latest_amounts: &[i64]) -> PaidBefore {
    PaidBefore {
        payments_to_payee: payments,
        last_account: Some(last.to_owned()),
        payments_to_account: to_account,
        latest_amounts: latest_amounts.to_vec(),
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
    let before = paid(2, "sha256:a", 2, &[1_000_000, 1_200_000]);
    assert_eq!(
        cues(asked(1_250_000), &verified("sha256:a"), &before, 3),
        []
    );
}

#[test]
fn a_first_payment_is_flagged_for_the_payee_and_the_account() {
    assert_eq!(
        cues(
            asked(1_250_000),
            &verified("sha256:a"),
            &PaidBefore::default(),
            3
        ),
        [RiskCue::FirstPaymentToPayee, RiskCue::FirstPaymentToAccount]
    );
    // The account was paid before, under another payee: only the payee is new.
    let account_known = PaidBefore {
        payments_to_account: 1,
        ..PaidBefore::default()
    };
    assert_eq!(
        cues(asked(1_250_000), &verified("sha256:a"), &account_known, 3),
        [RiskCue::FirstPaymentToPayee]
    );
    // The payee was paid before, its account never: only the account is new (and the
    // payee's account changed).
    let payee_known = paid(1_000, "sha256:b", 0, &[1_250_000]);
    assert_eq!(
        cues(asked(1_250_000), &verified("sha256:a"), &payee_known, 3),
        [
            RiskCue::FirstPaymentToAccount,
            RiskCue::AccountChangedSinceLastPayment
        ]
    );
}

#[test]
fn an_account_changed_since_the_last_payment_is_flagged() {
    let before = paid(1, "sha256:old", 0, &[1_000_000]);
    assert_eq!(
        cues(asked(1_000_000), &verified("sha256:new"), &before, 3),
        [
            RiskCue::FirstPaymentToAccount,
            RiskCue::AccountChangedSinceLastPayment
        ]
    );
    // Changed back to an account paid before: the last payment decides, and the account
    // is no first.
    let before = paid(2_000, "sha256:old", 1, &[1_000_000]);
    assert_eq!(
        cues(asked(1_000_000), &verified("sha256:new"), &before, 3),
        [RiskCue::AccountChangedSinceLastPayment]
    );
    // Paid on it since: stable.
    let before = paid(2_001, "sha256:new", 2, &[1_000_000]);
    assert_eq!(
        cues(asked(1_000_000), &verified("sha256:new"), &before, 3),
        []
    );
}

#[test]
fn no_account_is_no_change_and_no_first() {
    // The payee's payments never named an account (a provider without a directory).
    let before = PaidBefore {
        last_account: None,
        ..paid(3, "", 0, &[1_000_000])
    };
    assert_eq!(
        cues(asked(1_000_000), &verified("sha256:a"), &before, 3),
        [RiskCue::FirstPaymentToAccount]
    );
    // The directory says nothing of the account now: neither cue about it.
    let silent = PayeeNow {
        known: true,
        ..PayeeNow::default()
    };
    assert_eq!(
        cues(
            asked(1_000_000),
            &silent,
            &paid(3, "sha256:a", 0, &[1_000_000]),
            3
        ),
        []
    );
}

#[test]
fn an_amount_far_above_the_payees_median_is_flagged() {
    let before = paid(3, "sha256:a", 3, &[9_000_000, 100_000, 120_000]);
    // Median 120,000: up to 3× is usual.
    assert_eq!(cues(asked(360_000), &verified("sha256:a"), &before, 3), []);
    assert_eq!(
        cues(asked(360_001), &verified("sha256:a"), &before, 3),
        [RiskCue::AmountAboveUsual {
            multiple: 3,
            median_minor: 120_000
        }]
    );
    // Another multiple from the policy.
    assert_eq!(cues(asked(360_001), &verified("sha256:a"), &before, 4), []);
    // No amount in this currency (only others were paid): nothing usual to compare with.
    let other_currency = paid(3, "sha256:a", 3, &[]);
    assert_eq!(
        cues(asked(360_001), &verified("sha256:a"), &other_currency, 3),
        []
    );
}

#[test]
fn the_usual_amount_is_the_lower_median_of_the_latest_amounts() {
    // An even count: the lower middle, an amount that was really paid.
    let before = paid(4, "sha256:a", 4, &[400, 100, 300, 200]);
    assert_eq!(
        cues(asked(601), &verified("sha256:a"), &before, 3),
        [RiskCue::AmountAboveUsual {
            multiple: 3,
            median_minor: 200
        }]
    );
    // The latest amounts only: a payee paid 1,000 a thousand times, then 10,000 its
    // latest hundred times, usually gets 10,000.
    let latest = vec![10_000; USUAL_AMOUNTS_KEPT];
    let before = paid(1_100, "sha256:a", 1_100, &latest);
    assert_eq!(cues(asked(25_000), &verified("sha256:a"), &before, 3), []);
    // A median of zero flags nothing.
    let before = paid(1, "sha256:a", 1, &[0]);
    assert_eq!(cues(asked(1), &verified("sha256:a"), &before, 3), []);
}

#[test]
fn an_unverified_or_unknown_payee_is_flagged() {
    let before = paid(1, "sha256:a", 1, &[1_000_000]);
    let unverified = PayeeNow {
        verified: Some(false),
        ..verified("sha256:a")
    };
    assert_eq!(
        cues(asked(1_000_000), &unverified, &before, 3),
        [RiskCue::UnverifiedPayee]
    );
    assert_eq!(
        cues(asked(1_000_000), &PayeeNow::default(), &before, 3),
        [RiskCue::UnknownPayee]
    );
    // A provider without a directory: nothing to say about the payee itself.
    let silent = PayeeNow {
        known: true,
        ..PayeeNow::default()
    };
    assert_eq!(cues(asked(1_000_000), &silent, &before, 3), []);
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
