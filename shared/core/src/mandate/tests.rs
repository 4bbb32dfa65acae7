use chrono::TimeZone;
use serde_json::json;

use super::*;

/// A valid statement; the coverage tests start from it too.
pub(super) fn statement() -> Value {
    json!({
        "statement": "fleet.mandate.v1",
        "mandate_id": "md_01JF0000000000000000000000",
        "tenant_id": "org_482",
        "actions": ["payment.create"],
        "payees": [{"id": "vendor_77", "account_fingerprint": format!("sha256:{}", "a".repeat(64))}],
        "currency": "KZT",
        "per_operation_max_minor": 150_000,
        "budget_minor": 3_000_000,
        "count_limit": 40,
        "valid_from": "2026-12-01T00:00:00Z",
        "valid_until": "2027-01-01T00:00:00Z",
        "for_principal": "billing-bot"
    })
}

fn with(member: &str, value: Value) -> Value {
    let mut v = statement();
    v[member] = value;
    v
}

#[test]
fn a_statement_reads_and_writes_back_the_same_bytes() {
    let m = Mandate::from_json(&statement()).unwrap();
    assert_eq!(m.to_json(), statement());
    assert_eq!(
        m.to_bytes(),
        canonical_json(&statement()).into_bytes(),
        "the bytes signed are the canonical form of what was sent"
    );
    assert!(m.hash().starts_with("sha256:") && m.hash().len() == 71);
    let words = m.to_words();
    assert!(
        words.contains(
            "each at most 1,500.00 KZT, in all at most 30,000.00 KZT, at most 40 operations"
        ),
        "{words}"
    );
    assert!(words.contains("\"vendor_77\""), "{words}");
}

#[test]
fn any_verified_payee_is_a_word_not_a_list() {
    let m = Mandate::from_json(&with("payees", json!("any_verified"))).unwrap();
    assert_eq!(m.payees, MandatePayees::AnyVerified);
    assert!(m
        .to_words()
        .contains("any payee the provider's directory verified"));
}

#[test]
fn what_is_not_a_mandate_names_its_member() {
    let cases = [
        (with("statement", json!("fleet.mandate.v2")), "statement"),
        (with("mandate_id", json!("md_short")), "mandate_id"),
        (with("actions", json!(["crm.deal.update"])), "actions"),
        (with("actions", json!([])), "actions"),
        (
            with("actions", json!(["payment.create", "payment.create"])),
            "actions",
        ),
        (with("payees", json!([])), "payees"),
        (with("payees", json!([{"id": "vendor_77"}])), "payees"),
        (with("currency", json!("XXQ")), "currency"),
        (with("budget_minor", json!(0)), "budget_minor"),
        (with("budget_minor", json!(1.5)), "budget_minor"),
        (
            with("per_operation_max_minor", json!(3_000_001)),
            "per_operation_max_minor",
        ),
        (with("count_limit", json!(-1)), "count_limit"),
        (
            with("valid_until", json!("2026-11-30T00:00:00Z")),
            "valid_until",
        ),
        (
            with("valid_until", json!("2028-01-01T00:00:00Z")),
            "valid_until",
        ),
        (
            with("valid_from", json!("2026-12-01T00:00:00.5Z")),
            "valid_from",
        ),
        (with("for_principal", json!(7)), "for_principal"),
        (with("extra", json!(1)), "statement"),
    ];
    for (v, field) in cases {
        let refused = Mandate::from_json(&v).expect_err(&v.to_string());
        assert_eq!(refused.field, field, "{v}: {refused}");
    }
}

#[test]
fn the_window_and_what_is_left() {
    let m = Mandate::from_json(&statement()).unwrap();
    assert!(m.in_window(Utc.with_ymd_and_hms(2026, 12, 15, 0, 0, 0).unwrap()));
    assert!(!m.in_window(Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0).unwrap()));
    let standing = MandateStanding {
        budget_minor: 100,
        spent_minor: 30,
        count_limit: 5,
        used_count: 1,
        revoked: false,
    };
    assert_eq!(
        (standing.available_minor(), standing.revoked_minor()),
        (70, 0)
    );
    let revoked = MandateStanding {
        revoked: true,
        ..standing
    };
    assert_eq!(
        (revoked.available_minor(), revoked.revoked_minor()),
        (0, 70)
    );
}

mod before_the_call {
    use super::*;
    use crate::signed_quorum::RegisteredKey;
    use crate::signing::{ApproverKey, Signature};

    fn payee(fingerprint: &str, verified: bool) -> Value {
        json!({"status": "found", "id": "vendor_77", "name": "Vendor 77 LLP", "country": "KZ",
               "account": {"scheme": "iban", "masked": "KZ•• 1234", "fingerprint": fingerprint},
               "verified": verified, "version": 1, "looked_up_at": "2026-12-01T10:00:00Z"})
    }

    fn key(k: &ApproverKey, principal: &str, removed: bool) -> RegisteredKey {
        RegisteredKey {
            key_id: k.public_key().key_id(),
            principal: principal.to_owned(),
            public_key: k.public_key(),
            registered_at: Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap(),
            removed_at: removed.then(Utc::now),
        }
    }

    #[test]
    fn a_signed_mandate_holds_only_for_what_it_covers_and_with_the_signers_live_key() {
        let alice = ApproverKey::from_seed([3; 32]);
        let st = statement();
        let sig = alice.sign(canonical_json(&st).as_bytes());
        let stored_at = Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap();
        let fp = format!("sha256:{}", "a".repeat(64));
        let evidence = payee(&fp, true);
        let payload = json!({"invoice_id": "inv_1", "beneficiary_id": "vendor_77", "amount_minor": 150_000, "currency": "KZT"});
        let op = MandatedOperation {
            tenant_id: "org_482",
            action: Action::PaymentCreate,
            payload: &payload,
            payee: Some(&evidence),
            submitted_by: Some("billing-bot"),
        };
        let live = key(&alice, "alice", false);
        assert!(check_mandate(&st, "alice", stored_at, &sig, Some(&live), &op).is_ok());
        let check = |sig: &Signature, k: Option<&RegisteredKey>, op: &MandatedOperation<'_>| {
            check_mandate(&st, "alice", stored_at, sig, k, op).unwrap_err()
        };
        assert_eq!(
            check(&sig, Some(&key(&alice, "bob", false)), &op),
            MandateRefusal::NotTheSignersKey
        );
        assert_eq!(check(&sig, None, &op), MandateRefusal::NotTheSignersKey);
        assert_eq!(
            check(&sig, Some(&key(&alice, "alice", true)), &op),
            MandateRefusal::KeyRemoved
        );
        let forged = ApproverKey::from_seed([4; 32]).sign(canonical_json(&st).as_bytes());
        assert_eq!(
            check(&forged, Some(&live), &op),
            MandateRefusal::BadSignature
        );
        let over = json!({"invoice_id": "inv_1", "beneficiary_id": "vendor_77", "amount_minor": 150_001, "currency": "KZT"});
        let moved = payee(&format!("sha256:{}", "b".repeat(64)), true);
        // An operation the mandate does not cover, one member at a time.
        let mut over_amount = op;
        over_amount.payload = &over;
        let mut moved_payee = op;
        moved_payee.payee = Some(&moved);
        let mut other_submitter = op;
        other_submitter.submitted_by = Some("other-bot");
        let mut other_tenant = op;
        other_tenant.tenant_id = "org_9";
        for other in [over_amount, moved_payee, other_submitter, other_tenant] {
            let refusal = check(&sig, Some(&live), &other);
            assert_eq!(refusal, MandateRefusal::NotCovered, "{other:?}");
        }
    }

    #[test]
    fn any_verified_covers_only_a_verified_payee() {
        let m = Mandate::from_json(&with("payees", json!("any_verified"))).unwrap();
        let payload = json!({"invoice_id": "inv_1", "beneficiary_id": "vendor_77", "amount_minor": 100, "currency": "KZT"});
        let no = payee(&format!("sha256:{}", "c".repeat(64)), false);
        let op = |p| MandatedOperation {
            tenant_id: "org_482",
            action: Action::PaymentCreate,
            payload: &payload,
            payee: Some(p),
            submitted_by: Some("billing-bot"),
        };
        assert!(!m.covers(&op(&no)));
        let good = payee(&format!("sha256:{}", "c".repeat(64)), true);
        assert!(m.covers(&op(&good)));
    }
}
