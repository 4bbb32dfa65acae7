use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use super::*;
use crate::approval_statement::parse_expiry;
use crate::signing::ApproverKey;

const OP: &str = "op_01JD5ZQ8J8N0M1Q2R3S4T5V6W7";
const HASH: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000001";

fn t(text: &str) -> DateTime<Utc> {
    parse_expiry(text).unwrap()
}

fn payload() -> Value {
    json!({"invoice_id": "inv_9300", "beneficiary_id": "vendor_77", "amount_minor": 150000000, "currency": "KZT"})
}

fn subject<'a>(op: &'a str, payload: &'a Value) -> StatementSubject<'a> {
    StatementSubject {
        operation_id: op,
        tenant_id: "org_482",
        action: crate::Action::PaymentCreate,
        target: None,
        payload,
        payload_hash: HASH,
        payee: None,
    }
}

struct Approver {
    name: &'static str,
    key: ApproverKey,
}

impl Approver {
    fn new(name: &'static str, seed: u8) -> Approver {
        Approver {
            name,
            key: ApproverKey::from_seed([seed; 32]),
        }
    }

    fn registered(&self, at: &str) -> RegisteredKey {
        RegisteredKey {
            key_id: self.key.public_key().key_id(),
            principal: self.name.into(),
            public_key: self.key.public_key(),
            registered_at: t(at),
            removed_at: None,
        }
    }

    /// An approval at 12:00 of the statement about `op`, valid until `expires`.
    fn approval(&self, op: &str, payload: &Value, expires: &str) -> RecordedApproval {
        let statement = ApprovalStatement::derive(&subject(op, payload), t(expires));
        RecordedApproval {
            principal: self.name.into(),
            at: t("2026-12-01T12:00:00Z"),
            signed: Some(PresentedSignature {
                key_id: self.key.public_key().key_id(),
                signature: self.key.sign(&statement.to_bytes()),
                expires_at: t(expires),
            }),
        }
    }
}

const NOW: &str = "2026-12-01T12:30:00Z";
const LATER: &str = "2026-12-01T13:00:00Z";

fn judge(approval: &RecordedApproval, keys: &[RegisteredKey]) -> Result<(), SignatureRefusal> {
    let p = payload();
    check_signature(&subject(OP, &p), approval, keys, t(NOW))
}

#[test]
fn two_valid_signatures_of_distinct_principals_count_two() {
    let (alice, bob) = (Approver::new("alice", 1), Approver::new("bob", 2));
    let p = payload();
    let keys = [
        alice.registered("2026-12-01T09:00:00Z"),
        bob.registered("2026-12-01T09:00:00Z"),
    ];
    let approvals = [alice.approval(OP, &p, LATER), bob.approval(OP, &p, LATER)];
    let count = count_signed(&subject(OP, &p), &approvals, &keys, t(NOW));
    assert_eq!(
        count,
        SignedCount {
            valid: 2,
            refused: vec![]
        }
    );
    assert!(count.meets(2) && !count.meets(3));
}

#[test]
fn each_broken_rule_is_named() {
    let (alice, bob) = (Approver::new("alice", 1), Approver::new("bob", 2));
    let p = payload();
    let keys = [alice.registered("2026-12-01T09:00:00Z")];
    let good = alice.approval(OP, &p, LATER);
    assert_eq!(judge(&good, &keys), Ok(()));

    let unsigned = RecordedApproval {
        signed: None,
        ..good.clone()
    };
    assert_eq!(judge(&unsigned, &keys), Err(SignatureRefusal::Unsigned));

    assert_eq!(
        judge(&bob.approval(OP, &p, LATER), &keys),
        Err(SignatureRefusal::UnknownKey)
    );

    // Bob presents Alice's signature as his own.
    let stolen = RecordedApproval {
        principal: "bob".into(),
        ..good.clone()
    };
    assert_eq!(
        judge(&stolen, &keys),
        Err(SignatureRefusal::NotTheApproversKey)
    );

    let removed = [RegisteredKey {
        removed_at: Some(t("2026-12-01T12:10:00Z")),
        ..keys[0].clone()
    }];
    assert_eq!(judge(&good, &removed), Err(SignatureRefusal::KeyRemoved));

    let late = [alice.registered("2026-12-01T12:00:01Z")];
    assert_eq!(
        judge(&good, &late),
        Err(SignatureRefusal::KeyRegisteredAfterApproval)
    );

    assert_eq!(
        judge(&alice.approval(OP, &p, "2026-12-01T12:20:00Z"), &keys),
        Err(SignatureRefusal::Expired)
    );
    assert_eq!(
        judge(&alice.approval(OP, &p, "2026-12-02T12:00:01Z"), &keys),
        Err(SignatureRefusal::ExpiryOutOfBounds)
    );
    assert_eq!(
        judge(&alice.approval(OP, &p, "2026-12-01T11:59:59Z"), &keys),
        Err(SignatureRefusal::ExpiryOutOfBounds)
    );

    // Garbage bytes where the signature goes.
    let mut forged = good.clone();
    forged.signed.as_mut().unwrap().signature = Signature::from_bytes(&[7u8; 64]).unwrap();
    assert_eq!(judge(&forged, &keys), Err(SignatureRefusal::BadSignature));

    // The expiry recorded is not the one signed.
    let mut stretched = good.clone();
    stretched.signed.as_mut().unwrap().expires_at = t("2026-12-01T14:00:00Z");
    assert_eq!(
        judge(&stretched, &keys),
        Err(SignatureRefusal::BadSignature)
    );
}

#[test]
fn a_signature_over_another_operation_or_other_words_does_not_count() {
    let alice = Approver::new("alice", 1);
    let p = payload();
    let keys = [alice.registered("2026-12-01T09:00:00Z")];
    let replayed = alice.approval("op_01JD5ZQ8J8N0M1Q2R3S4T5V6W8", &p, LATER);
    assert_eq!(judge(&replayed, &keys), Err(SignatureRefusal::BadSignature));
    let mut other = payload();
    other["beneficiary_id"] = json!("mallory");
    let other_words = alice.approval(OP, &other, LATER);
    assert_eq!(
        judge(&other_words, &keys),
        Err(SignatureRefusal::BadSignature)
    );
}

#[test]
fn one_principal_counts_once() {
    let alice = Approver::new("alice", 1);
    let p = payload();
    let keys = [alice.registered("2026-12-01T09:00:00Z")];
    let a = alice.approval(OP, &p, LATER);
    let count = count_signed(&subject(OP, &p), &[a.clone(), a], &keys, t(NOW));
    assert_eq!(count.valid, 1);
    assert_eq!(
        count.refused,
        vec![("alice".to_owned(), SignatureRefusal::DuplicatePrincipal)]
    );
}

#[test]
fn the_statement_expiry_is_judged_by_now() {
    let alice = Approver::new("alice", 1);
    let p = payload();
    let keys = [alice.registered("2026-12-01T09:00:00Z")];
    let a = alice.approval(OP, &p, LATER);
    let s = subject(OP, &p);
    assert_eq!(
        check_signature(&s, &a, &keys, t(LATER) - Duration::seconds(1)),
        Ok(())
    );
    assert_eq!(
        check_signature(&s, &a, &keys, t(LATER)),
        Err(SignatureRefusal::Expired)
    );
}

/// A signature given over a v3 statement (before the headline named the payee) still
/// counts; one over words of no known version does not.
#[test]
fn a_signature_over_the_v3_statement_still_verifies() {
    let alice = Approver::new("alice", 7);
    let keys = [alice.registered("2026-12-01T11:00:00Z")];
    let p = payload();
    let sign_as = |version: &str| {
        let statement = ApprovalStatement::derive_as(&subject(OP, &p), t(LATER), version);
        let mut bytes = statement.to_bytes();
        if version == "none" {
            bytes = String::from_utf8(bytes)
                .unwrap()
                .replace("fleet.approval.v4", "fleet.approval.v9")
                .into_bytes();
        }
        RecordedApproval {
            principal: "alice".into(),
            at: t("2026-12-01T12:00:00Z"),
            signed: Some(PresentedSignature {
                key_id: alice.key.public_key().key_id(),
                signature: alice.key.sign(&bytes),
                expires_at: t(LATER),
            }),
        }
    };
    assert_eq!(
        judge(&sign_as(crate::approval_statement::STATEMENT_V3), &keys),
        Ok(())
    );
    assert_eq!(
        judge(
            &sign_as(crate::approval_statement::STATEMENT_VERSION),
            &keys
        ),
        Ok(())
    );
    assert_eq!(
        judge(&sign_as("none"), &keys),
        Err(SignatureRefusal::BadSignature)
    );
}
