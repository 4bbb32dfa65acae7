use chrono::{TimeZone, Utc};
use serde_json::{json, Value};

use super::verify::Trust;
use super::*;
use crate::approval_statement::{ApprovalStatement, StatementSubject};
use crate::catalogue::Action;
use crate::hash::Snapshot;
use crate::signing::ApproverKey;

const AT: &str = "2026-03-01T10:00:00.000000Z";

/// Records as `fleet_operation_evidence` returns them, of a payment approved by one
/// signed approval and paid by the provider's answer.
fn records(approver: &ApproverKey, removed_at: Option<&str>) -> Value {
    records_as(
        approver,
        removed_at,
        crate::approval_statement::STATEMENT_VERSION,
    )
}

/// [`records`], the approval signed over the statement of `version`.
fn records_as(approver: &ApproverKey, removed_at: Option<&str>, version: &str) -> Value {
    let payload = json!({"amount_minor": 125000, "currency": "EUR", "beneficiary_id": "vendor_77", "reference": "inv_1"});
    let snapshot = Snapshot {
        operation_id: "op_01J00000000000000000000000".into(),
        tenant_id: "org_1".into(),
        action: "payment.create".into(),
        provider: "payments".into(),
        target: None,
        payload: payload.clone(),
        policy_version: "quorum-v1".into(),
        data_version: "1".into(),
    };
    let hash = snapshot.hash();
    let expires = Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap();
    let statement = ApprovalStatement::derive_as(
        &StatementSubject {
            operation_id: &snapshot.operation_id,
            tenant_id: &snapshot.tenant_id,
            action: Action::parse("payment.create").unwrap(),
            target: None,
            payload: &payload,
            payload_hash: hash.as_str(),
            payee: None,
        },
        expires,
        version,
    );
    let signature = approver.sign(&statement.to_bytes());
    let public = approver.public_key();
    json!({
        "operation": {
            "operation_id": snapshot.operation_id, "tenant_id": "org_1", "action": "payment.create",
            "provider": "payments", "target": null, "payload": payload, "payload_hash": hash.as_str(),
            "policy_version": "quorum-v1", "data_version": "1", "idempotency_key": "key_1",
            "payee": null, "risk": null, "status": "succeeded", "external_id": "pay_1",
            "approvals_required": 1, "signatures_required": 1, "decided_by": "alice",
        },
        "policy": {"version": "quorum-v1", "text": "[payment]\n", "rules": {}, "loaded_at": AT},
        "approvals": [{
            "principal": "alice", "at": AT, "payload_hash": hash.as_str(), "voided_at": null,
            "signature_hex": hex::encode(signature.to_bytes()),
            "signed_expires_at": "2026-03-01T12:00:00.000000Z",
            "key": {"key_id": public.key_id().as_str(), "principal": "alice", "algorithm": "ed25519",
                    "public_key_hex": hex::encode(public.to_stored_bytes()),
                    "registered_at": "2026-02-01T00:00:00.000000Z", "removed_at": removed_at},
            "batch": null,
        }],
        "attempts": [{"fence": 1, "outcome": "succeeded", "external_id": "pay_1",
                      "response": {"id": "pay_1", "reference": "key_1"}}],
        "events": [{"id": 9, "kind": "transition", "to_status": "succeeded",
                    "evidence": {"confirmed": {"by": "answer", "object_id": "pay_1", "fence": 1}}}],
        "webhooks": [], "mandates": [], "read_at": AT,
    })
}

fn bundle(removed_at: Option<&str>) -> (Value, ApproverKey) {
    let deployment = ApproverKey::from_seed([7; 32]);
    let approver = ApproverKey::from_seed([9; 32]);
    let doc = assemble(&records(&approver, removed_at), Utc::now()).unwrap();
    (sign(doc, &deployment), deployment)
}

fn failed(report: &Report) -> Vec<String> {
    report
        .findings
        .iter()
        .filter(|f| !f.ok)
        .map(|f| f.part.clone())
        .collect()
}

#[test]
fn a_paid_payments_bundle_verifies_and_says_what_it_proves() {
    let (doc, key) = bundle(None);
    let report = verify(&doc, &Trust::Keys(vec![key.public_key()]));
    assert!(report.ok(), "{:?}", report.findings);
    assert!(report.proves.iter().any(|p| p.contains("pay_1")));
    assert!(report.cannot.iter().any(|c| c.contains("not consulted")));
    // Through the text form, as a file is read.
    let read: Value = serde_json::from_str(&canonical_json_of(&doc)).unwrap();
    let pinned = Trust::PinnedId(key.public_key().key_id().as_str().to_owned());
    assert!(verify(&read, &pinned).ok());
}

fn canonical_json_of(v: &Value) -> String {
    crate::hash::canonical_json(v)
}

#[test]
fn a_key_removed_after_the_approval_still_verifies() {
    let (doc, key) = bundle(Some("2026-04-01T00:00:00.000000Z"));
    assert!(verify(&doc, &Trust::Keys(vec![key.public_key()])).ok());
    let (doc, key) = bundle(Some("2026-02-15T00:00:00.000000Z"));
    let report = verify(&doc, &Trust::Keys(vec![key.public_key()]));
    assert_eq!(failed(&report), ["key of alice", "quorum"]);
}

#[test]
fn a_changed_part_is_named() {
    let (doc, key) = bundle(None);
    let trust = Trust::Keys(vec![key.public_key()]);
    let mut d = doc.clone();
    d["parts"]["snapshot"]["members"]["payload"]["amount_minor"] = json!(125001);
    assert_eq!(
        failed(&verify(&d, &trust)),
        ["snapshot", "snapshot", "signature"]
    );
    let mut d = doc.clone();
    d["parts"]["policy"]["text"] = json!("[payment]\n#");
    assert_eq!(failed(&verify(&d, &trust)), ["policy", "signature"]);
    let mut d = doc.clone();
    d["parts"]["provider"]["object_id"] = json!("pay_2");
    assert_eq!(
        failed(&verify(&d, &trust)),
        ["provider", "provider", "signature"]
    );
    let mut d = doc.clone();
    let sig = d["parts"]["approvals"][0]["signature"]
        .as_str()
        .unwrap()
        .to_owned();
    let flipped = if sig.starts_with('A') { "B" } else { "A" };
    d["parts"]["approvals"][0]["signature"] = json!(format!("{flipped}{}", &sig[1..]));
    assert_eq!(
        failed(&verify(&d, &trust)),
        ["approvals", "approval by alice", "quorum", "signature"]
    );
    let other = ApproverKey::from_seed([1; 32]);
    assert_eq!(
        failed(&verify(&doc, &Trust::Keys(vec![other.public_key()]))),
        ["signature"]
    );
}

#[test]
fn an_approval_signed_under_an_earlier_statement_version_is_rebuilt_in_it() {
    use crate::approval_statement::STATEMENT_VERSIONS;
    let deployment = ApproverKey::from_seed([7; 32]);
    let approver = ApproverKey::from_seed([9; 32]);
    for version in STATEMENT_VERSIONS {
        let doc = assemble(&records_as(&approver, None, version), Utc::now()).unwrap();
        assert_eq!(
            doc["parts"]["approvals"][0]["statement"]["statement"],
            *version
        );
        let report = verify(
            &sign(doc, &deployment),
            &Trust::Keys(vec![deployment.public_key()]),
        );
        assert!(report.ok(), "{version}: {:?}", report.findings);
    }
}
