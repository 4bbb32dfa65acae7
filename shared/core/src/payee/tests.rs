use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::*;

fn at() -> DateTime<Utc> {
    "2026-12-01T18:00:00Z".parse().unwrap()
}

fn answer() -> Value {
    json!({"id": "vendor_77", "name": "Vendor 77 LLP", "country": "KZ",
           "account": {"scheme": "iban", "masked": "KZ•• •••• •••• 1234",
                       "fingerprint": format!("sha256:{}", "a".repeat(64))},
           "verified": true, "version": 3,
           "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-02T00:00:00Z"})
}

#[test]
fn a_found_payee_is_kept_with_its_masked_account_and_version() {
    let evidence = PayeeEvidence::of_lookup("vendor_77", Ok(Some(&answer())), at());
    assert_eq!(evidence.version(), Some(3));
    assert_eq!(
        evidence.to_json(),
        json!({"status": "found", "id": "vendor_77", "name": "Vendor 77 LLP", "country": "KZ",
               "account": {"scheme": "iban", "masked": "KZ•• •••• •••• 1234",
                           "fingerprint": format!("sha256:{}", "a".repeat(64))},
               "verified": true, "version": 3, "looked_up_at": "2026-12-01T18:00:00Z"})
    );
    assert_eq!(
        PayeeEvidence::from_json(&evidence.to_json()),
        Some(evidence)
    );
}

#[test]
fn a_missing_or_unreadable_payee_is_unknown_with_its_reason() {
    let missing = PayeeEvidence::of_lookup("vendor_0", Ok(None), at());
    assert_eq!(
        missing.to_json(),
        json!({"status": "unknown", "id": "vendor_0", "reason": "not_found",
               "looked_up_at": "2026-12-01T18:00:00Z"})
    );
    assert_eq!(missing.version(), None);
    let failed = PayeeEvidence::of_lookup("vendor_77", Err(()), at());
    assert!(matches!(
        failed,
        PayeeEvidence::Unknown {
            reason: UnknownPayee::LookupFailed,
            ..
        }
    ));
    for broken in [
        ("country", json!("kz")),
        ("version", json!(0)),
        ("verified", json!("yes")),
        ("id", json!("vendor_78")),
        ("name", json!("x".repeat(201))),
    ] {
        let mut a = answer();
        a[broken.0] = broken.1.clone();
        let evidence = PayeeEvidence::of_lookup("vendor_77", Ok(Some(&a)), at());
        assert_eq!(evidence.version(), None, "{broken:?}");
    }
    let mut a = answer();
    a["account"]["fingerprint"] = json!("md5:1");
    assert_eq!(
        PayeeEvidence::of_lookup("vendor_77", Ok(Some(&a)), at()).version(),
        None
    );
}

#[test]
fn the_payee_member_is_read_from_the_payload() {
    let payload = json!({"beneficiary_id": "vendor_77"});
    assert_eq!(
        payee_id(Some("beneficiary_id"), &payload),
        Some("vendor_77")
    );
    assert_eq!(payee_id(None, &payload), None);
    assert_eq!(payee_id(Some("owner_id"), &payload), None);
}
