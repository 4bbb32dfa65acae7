//! From the stored records (`fleet_operation_evidence`'s answer) to the bundle: the
//! parts, their digests, what the bundle cannot prove, and the deployment's signature.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

use super::{digest, signed_bytes, FORMAT, PARTS};
use crate::approval_statement::{ApprovalStatement, StatementSubject, STATEMENT_VERSIONS};
use crate::catalogue::Action;
use crate::hash::Snapshot;
use crate::signing::{ApproverKey, PublicKey, Signature};

/// What no bundle proves, said in every one.
const ALWAYS_UNPROVEN: [&str; 4] = [
    "The provider's own records were not consulted: what the provider answered is as the fleet recorded it (the attempts' allow-listed answers, the lookups, the provider's events).",
    "That the administrators who registered keys were right to: a registration proves which administrator's key vouched for a key and when, down to the deployment's evidence key, whose holder registered the first administrators.",
    "The request bytes sent to the provider were not kept: each attempt is tied to the operation's idempotency key and snapshot hash, from which the request is built.",
    "Times are the deployment's database clock.",
];

/// The unsigned bundle of the records `r` (as `fleet_operation_evidence` returns them),
/// made at `now`. `Err` names what is missing from the records.
pub fn assemble(r: &Value, now: DateTime<Utc>) -> Result<Value, String> {
    let op = r
        .get("operation")
        .filter(|o| o.is_object())
        .ok_or("no operation")?;
    let text = |v: &Value, name: &str| v.get(name).and_then(Value::as_str).map(str::to_owned);
    let operation_id = text(op, "operation_id").ok_or("no operation_id")?;
    let tenant_id = text(op, "tenant_id").ok_or("no tenant_id")?;
    let payload_hash = text(op, "payload_hash").ok_or("no payload_hash")?;
    let action_name = text(op, "action").ok_or("no action")?;
    let snapshot = Snapshot {
        operation_id: operation_id.clone(),
        tenant_id: tenant_id.clone(),
        action: action_name.clone(),
        provider: text(op, "provider").ok_or("no provider")?,
        target: text(op, "target"),
        payload: op["payload"].clone(),
        policy_version: text(op, "policy_version").ok_or("no policy_version")?,
        data_version: text(op, "data_version").ok_or("no data_version")?,
    };
    let mut unproven: Vec<String> = ALWAYS_UNPROVEN.iter().map(|s| (*s).to_owned()).collect();

    let policy = match r.get("policy").filter(|p| p.is_object()) {
        Some(p) => json!({
            "version": p["version"], "text": p["text"], "rules": p["rules"], "loaded_at": p["loaded_at"],
        }),
        None => {
            unproven.push(format!(
                "The text of policy {} is no longer held by the deployment.",
                snapshot.policy_version
            ));
            json!({"version": snapshot.policy_version, "text": null, "rules": null, "loaded_at": null})
        }
    };
    let mut policy = policy;
    policy["applied"] = json!({
        "approvals_required": op["approvals_required"],
        "signatures_required": op["signatures_required"],
        "risk": op["risk"],
    });

    let subject = StatementSubject {
        operation_id: &operation_id,
        tenant_id: &tenant_id,
        action: Action::parse(&action_name).ok_or("an action the catalogue does not hold")?,
        target: snapshot.target.as_deref(),
        payload: &snapshot.payload,
        payload_hash: &payload_hash,
        payee: op.get("payee").filter(|p| !p.is_null()),
    };
    let approvals: Vec<Value> = list(r, "approvals")
        .iter()
        .map(|a| approval(a, &subject))
        .collect();
    let mandates: Vec<Value> = list(r, "mandates")
        .iter()
        .map(|m| {
            let mut m = m.clone();
            rename_hex(&mut m, "signature_hex", "signature");
            if let Some(key) = m.get_mut("key").filter(|k| k.is_object()) {
                key_evidence(key);
            }
            m
        })
        .collect();
    let legacy = legacy_keys(&approvals, &mandates);
    if !legacy.is_empty() {
        unproven.push(format!(
            "Who registered {}: registered before registrations were signed, so only the database's record (registered_by, registered_as) says who did and when.",
            legacy.join(", ")
        ));
    }
    let idempotency_key = op["idempotency_key"].clone();
    let attempts: Vec<Value> = list(r, "attempts")
        .iter()
        .map(|a| {
            let mut a = a.clone();
            a["request"] =
                json!({"idempotency_key": idempotency_key, "payload_hash": payload_hash});
            a
        })
        .collect();
    let events = Value::Array(list(r, "events").to_vec());
    let confirmation = list(r, "events")
        .iter()
        .rev()
        .find(|e| e["kind"] == "transition" && e["to_status"] == "succeeded")
        .map(|e| e["evidence"]["confirmed"].clone())
        .unwrap_or(Value::Null);
    let lookups: Vec<Value> = list(r, "events")
        .iter()
        .filter(|e| e["kind"] == "lookup")
        .map(|e| json!({"at": e["at"], "fence": e["fence"], "asked_and_answered": e["evidence"]}))
        .collect();
    let provider = json!({
        "provider": snapshot.provider,
        "object_id": op["external_id"],
        "idempotency_key": idempotency_key,
        "provider_request_id": op["provider_request_id"],
        "result": op["result"],
        "confirmation": confirmation,
        "lookups": lookups,
        "webhooks": list(r, "webhooks"),
    });
    let mut operation = Map::new();
    for name in [
        "operation_id",
        "tenant_id",
        "idempotency_key",
        "status",
        "reason",
        "external_id",
        "approval_status",
        "approvals_required",
        "signatures_required",
        "decided_by",
        "decided_at",
        "submitted_by",
        "created_at",
        "resolved_at",
    ] {
        operation.insert(name.to_owned(), op[name].clone());
    }

    let parts = json!({
        "snapshot": {"members": snapshot.to_json(), "hash": payload_hash},
        "policy": policy,
        "approvals": approvals,
        "mandates": mandates,
        "attempts": attempts,
        "provider": provider,
        "events": events,
        "payee": op["payee"],
        "operation": operation,
    });
    let digests: Map<String, Value> = PARTS
        .iter()
        .map(|p| ((*p).to_owned(), Value::String(digest(&parts[*p]))))
        .collect();
    Ok(json!({
        "format": FORMAT,
        "operation_id": operation_id,
        "tenant_id": tenant_id,
        "made_at": now.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "records_read_at": r["read_at"],
        "parts": parts,
        "digests": digests,
        "cannot_prove": unproven,
    }))
}

/// `doc` signed by the deployment's evidence key.
pub fn sign(mut doc: Value, key: &ApproverKey) -> Value {
    let public = key.public_key();
    let signature = key.sign(&signed_bytes(&doc));
    doc["signature"] = json!({
        "algorithm": public.algorithm(),
        "key_id": public.key_id().as_str(),
        "public_key": public.to_text(),
        "value": signature.to_text(),
    });
    doc
}

fn list<'a>(r: &'a Value, name: &str) -> &'a [Value] {
    r.get(name)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Moves a hex member to `to` as unpadded base64url (the form keys and signatures take
/// everywhere else).
fn rename_hex(v: &mut Value, from: &str, to: &str) {
    let Some(map) = v.as_object_mut() else { return };
    let converted = map
        .remove(from)
        .and_then(|h| h.as_str().and_then(|h| hex::decode(h).ok()))
        .map(|bytes| Value::String(URL_SAFE_NO_PAD.encode(bytes)));
    map.insert(to.to_owned(), converted.unwrap_or(Value::Null));
}

/// A key as `fleet_key_evidence` gives it, in the bundle's forms: bytes as base64url,
/// whether its registration is signed, and its registrar's key the same way, down to the
/// root.
fn key_evidence(key: &mut Value) {
    rename_hex(key, "public_key_hex", "public_key");
    rename_hex(key, "registration_signature_hex", "registration_signature");
    key["registration_signed"] = Value::Bool(key["registration"].is_object());
    if let Some(registrar) = key.get_mut("registrar").filter(|k| k.is_object()) {
        key_evidence(registrar);
    }
}

/// The ids of the keys in the bundle (approvers', signers', registrars') whose
/// registration was never signed.
fn legacy_keys(approvals: &[Value], mandates: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let keys = approvals.iter().chain(mandates).map(|x| &x["key"]);
    for mut key in keys {
        while key.is_object() {
            let id = key["key_id"].as_str().unwrap_or("?").to_owned();
            if key["registration_legacy"] == true && !out.contains(&id) {
                out.push(id);
            }
            key = &key["registrar"];
        }
    }
    out
}

/// One approval: as recorded, with the statement its signature is over, its key's
/// registration and whether the key was valid when it was given.
fn approval(a: &Value, subject: &StatementSubject<'_>) -> Value {
    let mut a = a.clone();
    rename_hex(&mut a, "signature_hex", "signature");
    if let Some(batch) = a.get_mut("batch").filter(|b| b.is_object()) {
        rename_hex(batch, "signature_hex", "signature");
    }
    let at = a["at"].as_str().unwrap_or_default().to_owned();
    if let Some(key) = a.get_mut("key").filter(|k| k.is_object()) {
        key_evidence(key);
        let registered = key["registered_at"].as_str().unwrap_or_default();
        let removed = key["removed_at"].as_str();
        key["valid_at_approval"] =
            Value::Bool(registered <= at.as_str() && removed.is_none_or(|r| r > at.as_str()));
    }
    let expires = a["signed_expires_at"]
        .as_str()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok());
    a["statement"] = match (a["signature"].is_string(), expires) {
        (true, Some(expires)) => statement_signed(&a, subject, expires.with_timezone(&Utc)),
        _ => Value::Null,
    };
    a
}

/// The statement the approval's signature is over, in the version it was signed under:
/// statements changed version as the approval page changed, and a row does not say which
/// one its signer made, so each version is rebuilt (newest first) and the one the key
/// verifies is kept. None verifying (a forged row), the current version is kept, and the
/// verifier says the signature does not verify.
fn statement_signed(a: &Value, subject: &StatementSubject<'_>, expires: DateTime<Utc>) -> Value {
    let key = a.get("key").and_then(|k| {
        let bytes = URL_SAFE_NO_PAD.decode(k["public_key"].as_str()?).ok()?;
        PublicKey::stored(
            k["algorithm"].as_str()?,
            &bytes,
            k["rp_id"].as_str(),
            k["origin"].as_str(),
        )
    });
    let signature = a["signature"].as_str().and_then(Signature::parse);
    let versions = STATEMENT_VERSIONS
        .iter()
        .map(|v| ApprovalStatement::derive_as(subject, expires, v));
    let mut first = None;
    for statement in versions {
        if let (Some(k), Some(s)) = (&key, &signature) {
            if k.verifies(&statement.to_bytes(), s) {
                return statement.to_json();
            }
        }
        first.get_or_insert(statement);
    }
    first.map_or(Value::Null, |s| s.to_json())
}
