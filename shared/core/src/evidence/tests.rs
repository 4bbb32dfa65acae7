use chrono::{TimeZone, Utc};
use serde_json::{json, Value};

use super::verify::Trust;
use super::*;
use crate::approval_statement::{ApprovalStatement, StatementSubject};
use crate::catalogue::Action;
use crate::hash::Snapshot;
use crate::key_registration::{parse_time, KeyRegistration, Registrar};
use crate::signing::ApproverKey;

const AT: &str = "2026-03-01T10:00:00.000000Z";

/// The deployment's evidence key, and the administrator its registration vouches for.
fn deployment() -> ApproverKey {
    ApproverKey::from_seed([7; 32])
}

fn admin() -> ApproverKey {
    ApproverKey::from_seed([8; 32])
}

/// A key as `fleet_key_evidence` returns it, registered at `at` and signed by `signer`:
/// the deployment's evidence key (`registrar: None`) or an administrator, whose own key
/// record is given.
fn key_record(
    key: &ApproverKey,
    principal: &str,
    role: &str,
    at: &str,
    removed_at: Option<&str>,
    signer: &ApproverKey,
    registrar: Option<(&str, Value)>,
) -> Value {
    let registration = KeyRegistration {
        principal: principal.into(),
        role: role.into(),
        tenants: vec!["org_1".into()],
        key: key.public_key(),
        registered_at: parse_time(at).unwrap(),
        registered_by: "ops".into(),
        registrar: match &registrar {
            None => Registrar::EvidenceKey {
                key: signer.public_key(),
            },
            Some((p, _)) => Registrar::Admin {
                principal: (*p).into(),
                key_id: signer.public_key().key_id(),
            },
        },
    };
    let signature = registration.sign(signer).unwrap();
    let public = key.public_key();
    json!({
        "key_id": public.key_id().as_str(), "principal": principal, "algorithm": "ed25519",
        "public_key_hex": hex::encode(public.to_stored_bytes()),
        "registered_at": at, "removed_at": removed_at, "registered_by": "ops",
        "registration_legacy": false, "registration": registration.to_json(),
        "registration_signature_hex": hex::encode(signature.to_bytes()),
        "registrar_key_id": signer.public_key().key_id().as_str(),
        "registrar": registrar.map(|(_, r)| r),
    })
}

/// `key` of the approver alice, registered by the administrator dana, whose key the
/// deployment's evidence key registered.
fn alices_key(key: &ApproverKey, removed_at: Option<&str>) -> Value {
    let dana = key_record(
        &admin(),
        "dana",
        "admin",
        "2026-01-01T00:00:00.000000Z",
        None,
        &deployment(),
        None,
    );
    key_record(
        key,
        "alice",
        "approver",
        "2026-02-01T00:00:00.000000Z",
        removed_at,
        &admin(),
        Some(("dana", dana)),
    )
}

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
            "key": alices_key(approver, removed_at),
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
    let approver = ApproverKey::from_seed([9; 32]);
    let doc = assemble(&records(&approver, removed_at), Utc::now()).unwrap();
    (sign(doc, &deployment()), deployment())
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
    // Another deployment's key: neither the bundle's signer nor the root of its chain.
    let other = ApproverKey::from_seed([1; 32]);
    let dana = admin().public_key().key_id();
    let alice = ApproverKey::from_seed([9; 32]).public_key().key_id();
    assert_eq!(
        failed(&verify(&doc, &Trust::Keys(vec![other.public_key()]))),
        [
            format!("registration of {dana}"),
            format!("registration of {alice}"),
            "quorum".into(),
            "signature".into()
        ]
    );
}

/// `doc` with its digests made again and signed again by the deployment: what a
/// verifier sees when the only change is the one a test made inside a part.
fn resigned(mut doc: Value) -> Value {
    for part in PARTS {
        doc["digests"][part] = json!(digest(&doc["parts"][part]));
    }
    if let Some(map) = doc.as_object_mut() {
        map.remove("signature");
    }
    sign(doc, &deployment())
}

#[test]
fn the_registration_chain_is_checked_down_to_the_evidence_key() {
    let (doc, key) = bundle(None);
    let trust = Trust::Keys(vec![key.public_key()]);
    let report = verify(&doc, &trust);
    let dana = admin().public_key().key_id();
    let alice = ApproverKey::from_seed([9; 32]).public_key().key_id();
    let registrations: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.part.starts_with("registration of"))
        .map(|f| f.words.as_str())
        .collect();
    assert_eq!(registrations.len(), 2, "{registrations:?}");
    assert!(registrations[0].contains("(the root)"), "{registrations:?}");
    assert!(
        registrations[1].contains("administrator dana"),
        "{registrations:?}"
    );
    assert_eq!(
        doc["parts"]["approvals"][0]["key"]["registration_signed"],
        true
    );

    // A byte of a registration's signature changed, the bundle signed again: the
    // registration is named, and the approval it vouched for does not count.
    let mut d = doc.clone();
    let k = &mut d["parts"]["approvals"][0]["key"];
    let sig = k["registration_signature"].as_str().unwrap().to_owned();
    let flipped = if sig.starts_with('A') { "B" } else { "A" };
    k["registration_signature"] = json!(format!("{flipped}{}", &sig[1..]));
    assert_eq!(
        failed(&verify(&resigned(d), &trust)),
        [format!("registration of {alice}"), "quorum".into()]
    );
    // The administrator's own registration changed: the link above it fails too.
    let mut d = doc.clone();
    d["parts"]["approvals"][0]["key"]["registrar"]["registration"]["role"] = json!("approver");
    assert_eq!(
        failed(&verify(&resigned(d), &trust)),
        [
            format!("registration of {dana}"),
            format!("registration of {alice}"),
            "quorum".into()
        ]
    );
    // A legacy key verifies, and is said to be unsigned.
    let mut d = doc.clone();
    let k = &mut d["parts"]["approvals"][0]["key"];
    k["registration_legacy"] = json!(true);
    k["registration"] = Value::Null;
    let report = verify(&resigned(d), &trust);
    assert!(report.ok(), "{:?}", report.findings);
    assert!(report
        .findings
        .iter()
        .any(|f| f.words.starts_with("NOT signed: registered before")));
    assert!(report.proves.iter().any(|p| p.contains(alice.as_str())));
    // A bundle made before bundles carried registrations still verifies, saying so.
    let mut d = doc.clone();
    let k = d["parts"]["approvals"][0]["key"].as_object_mut().unwrap();
    for member in [
        "registration_legacy",
        "registration",
        "registration_signature",
        "registrar",
    ] {
        k.remove(member);
    }
    k.insert("registration_signed".into(), json!(false));
    let report = verify(&resigned(d), &trust);
    assert!(report.ok(), "{:?}", report.findings);
}

/// Records of a payment approved by alice's mandate `md_1` (signed with her key), used
/// at `used_at`.
fn mandated_records(used_at: &str) -> Value {
    let approver = ApproverKey::from_seed([9; 32]);
    let mut r = records(&approver, None);
    let fingerprint = format!("sha256:{}", "ab".repeat(32));
    let statement = json!({
        "statement": "fleet.mandate.v1", "mandate_id": "md_01JF0000000000000000000000", "tenant_id": "org_1",
        "actions": ["payment.create"], "payees": [{"id": "vendor_77", "account_fingerprint": fingerprint}],
        "currency": "EUR", "per_operation_max_minor": 150000, "budget_minor": 1000000,
        "count_limit": 10, "valid_from": "2026-02-15T00:00:00Z", "valid_until": "2026-04-01T00:00:00Z",
        "for_principal": null,
    });
    let signature = approver.sign(crate::hash::canonical_json(&statement).as_bytes());
    r["operation"]["decided_by"] = json!("mandate:md_01JF0000000000000000000000");
    r["operation"]["payee"] = json!({
        "status": "found", "id": "vendor_77", "name": "Vendor 77", "country": "DE",
        "account": {"scheme": "iban", "masked": "DE** 1234", "fingerprint": fingerprint},
        "verified": true, "version": 1, "looked_up_at": AT,
    });
    r["approvals"] = json!([]);
    r["mandates"] = json!([{
        "mandate_id": "md_01JF0000000000000000000000", "amount_minor": 125000, "at": used_at, "statement": statement,
        "signed_by": "alice", "key_id": approver.public_key().key_id().as_str(),
        "signature_hex": hex::encode(signature.to_bytes()),
        "stored_at": "2026-02-20T00:00:00.000000Z", "key": alices_key(&approver, None),
    }]);
    r
}

#[test]
fn a_mandates_signature_key_and_terms_are_checked() {
    let trust = Trust::Keys(vec![deployment().public_key()]);
    let doc = sign(
        assemble(&mandated_records(AT), Utc::now()).unwrap(),
        &deployment(),
    );
    let report = verify(&doc, &trust);
    assert!(report.ok(), "{:?}", report.findings);
    assert!(report.proves.iter().any(|p| p.contains("Mandate md_01JF")));

    let mut d = doc.clone();
    let sig = d["parts"]["mandates"][0]["signature"]
        .as_str()
        .unwrap()
        .to_owned();
    let flipped = if sig.starts_with('A') { "B" } else { "A" };
    d["parts"]["mandates"][0]["signature"] = json!(format!("{flipped}{}", &sig[1..]));
    assert_eq!(
        failed(&verify(&resigned(d), &trust)),
        ["mandate md_01JF0000000000000000000000", "quorum"]
    );
    let mut d = doc.clone();
    d["parts"]["mandates"][0]["statement"]["per_operation_max_minor"] = json!(100000);
    assert_eq!(
        failed(&verify(&resigned(d), &trust)),
        [
            "mandate md_01JF0000000000000000000000",
            "terms of mandate md_01JF0000000000000000000000",
            "quorum"
        ]
    );
    // Used after its window closed: the terms do not cover the use.
    let late = sign(
        assemble(&mandated_records("2026-05-01T00:00:00.000000Z"), Utc::now()).unwrap(),
        &deployment(),
    );
    assert_eq!(
        failed(&verify(&late, &trust)),
        ["terms of mandate md_01JF0000000000000000000000", "quorum"]
    );
}

#[test]
fn an_approval_signed_under_an_earlier_statement_version_is_rebuilt_in_it() {
    use crate::approval_statement::STATEMENT_VERSIONS;
    let deployment = deployment();
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
