//! Checking a bundle offline: every part against its signed digest, the snapshot against
//! its hash, each approver's signature against the key in the bundle, the key's validity
//! when it was used, each key's signed registration down to the deployment's evidence key
//! ([`super::chain`]), each mandate's signature and terms ([`super::mandates`]), the
//! quorum under the policy in the bundle, the provider's receipt, and the deployment's
//! signature. Every check is a [`Finding`] naming its part, so a changed byte is reported
//! where it is.

use std::collections::BTreeSet;

use serde_json::Value;

use super::bundle_keys::{key_valid_at, public_key};
use super::chain::Chains;
use super::findings::Report;
use super::{digest, signed_bytes, FORMAT, PARTS};
use crate::hash::{canonical_json, hash_value};
use crate::signing::{KeyId, PublicKey, Signature};

/// Whom the deployment's signature must be from.
#[derive(Debug, Clone)]
pub enum Trust {
    /// One of these public keys (the deployment's published evidence keys).
    Keys(Vec<PublicKey>),
    /// The key in the bundle, if its id is this one.
    PinnedId(String),
}

/// Checks `doc` against `trust`.
pub fn verify(doc: &Value, trust: &Trust) -> Report {
    let mut r = Report::default();
    if !r.check(
        "format",
        doc["format"] == FORMAT,
        format!("the format is {FORMAT}"),
    ) {
        return r;
    }
    let parts = &doc["parts"];
    for part in PARTS {
        let ok = doc["digests"][part].as_str() == Some(digest(&parts[part]).as_str());
        r.check(
            part,
            ok,
            if ok {
                "unchanged since signed (its digest matches)".to_owned()
            } else {
                "CHANGED: its digest is not the one signed".to_owned()
            },
        );
    }
    let snapshot = &parts["snapshot"];
    let hash = snapshot["hash"].as_str().unwrap_or_default();
    let members = &snapshot["members"];
    let hash_ok = hash_value(members).as_str() == hash
        && members["operation_id"] == doc["operation_id"]
        && members["tenant_id"] == doc["tenant_id"];
    r.check(
        "snapshot",
        hash_ok,
        if hash_ok {
            format!("its RFC 8785 SHA-256 is {hash}")
        } else {
            "CHANGED: the snapshot's hash is not the one recorded (or it is another operation's)"
                .to_owned()
        },
    );
    let policy = &parts["policy"];
    let policy_ok = policy["version"] == members["policy_version"];
    r.check(
        "policy",
        policy_ok,
        format!(
            "policy {} is the snapshot's{}",
            policy["version"],
            if policy_ok { "" } else { ": NOT" }
        ),
    );
    let mut chains = Chains::new(roots(doc, trust));
    let signed = approvals(&mut r, parts, hash, &mut chains);
    let mandates = super::mandates::check(&mut r, parts, &mut chains);
    quorum(&mut r, parts, hash, signed, &mandates);
    provider(&mut r, parts);
    deployment_signature(&mut r, doc, trust);
    r.cannot = doc["cannot_prove"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if r.ok() {
        words(&mut r, parts, hash, signed, &chains, &mandates);
    }
    r
}

/// The keys a registration chain may end at: the deployment's evidence keys the bundle
/// is checked against (the bundle's own signer, when that is the one pinned).
fn roots(doc: &Value, trust: &Trust) -> Vec<PublicKey> {
    match trust {
        Trust::Keys(keys) => keys.clone(),
        Trust::PinnedId(id) => doc["signature"]["public_key"]
            .as_str()
            .and_then(PublicKey::parse)
            .filter(|k| k.key_id().as_str() == id)
            .into_iter()
            .collect(),
    }
}

/// Checks every signed approval; returns how many distinct principals signed with a key
/// that was theirs and valid when they approved.
fn approvals(r: &mut Report, parts: &Value, hash: &str, chains: &mut Chains) -> usize {
    let mut signers = BTreeSet::new();
    for a in parts["approvals"].as_array().map_or(&[][..], Vec::as_slice) {
        let who = a["principal"].as_str().unwrap_or("?");
        let part = format!("approval by {who}");
        if let Some(batch) = a.get("batch").filter(|b| b.is_object()) {
            let ok = batch_signature_holds(batch, &a["key"], parts, hash)
                && a["key"]["principal"].as_str() == Some(who);
            r.check(
                &part,
                ok,
                if ok {
                    "the batch's signature verifies and lists this operation and hash"
                } else {
                    "the batch's signature does NOT verify, or it does not list this operation"
                },
            );
            let valid = key_valid_at(&a["key"], batch["at"].as_str().unwrap_or_default());
            r.check(
                &format!("key of {who}"),
                valid,
                if valid {
                    "registered before the batch was signed and not removed then"
                } else {
                    "NOT valid when the batch was signed"
                },
            );
            let vouched = chains.check(r, &a["key"]);
            if ok && valid && vouched && a["voided_at"].is_null() {
                signers.insert(who.to_owned());
            }
            continue;
        }
        if a["signature"].is_null() {
            continue;
        }
        let statement = &a["statement"];
        let key = &a["key"];
        let public = public_key(key);
        let signature = a["signature"].as_str().and_then(Signature::parse);
        let bound = statement["operation_id"] == parts["snapshot"]["members"]["operation_id"]
            && statement["payload_hash"].as_str() == Some(hash);
        let verifies = match (&public, signature) {
            (Some(k), Some(s)) => k.verifies(canonical_json(statement).as_bytes(), &s),
            _ => false,
        };
        let id_ok = public.as_ref().map(|k| k.key_id().as_str().to_owned())
            == key["key_id"].as_str().map(str::to_owned);
        let theirs = key["principal"].as_str() == Some(who);
        let valid = key_valid_at(key, a["at"].as_str().unwrap_or_default());
        let ok = verifies && bound && id_ok && theirs;
        r.check(
            &part,
            ok,
            if ok {
                format!(
                    "the signature by key {} verifies over the statement of this snapshot",
                    key["key_id"].as_str().unwrap_or("?")
                )
            } else {
                "the signature does NOT verify (statement, signature or key changed, or the key is not the approver's)".to_owned()
            },
        );
        r.check(
            &format!("key of {who}"),
            valid,
            if valid {
                "registered before the approval and not removed then (a later removal does not undo it)"
            } else {
                "NOT valid when the approval was given"
            },
        );
        let vouched = key.is_object() && chains.check(r, key);
        if ok && valid && vouched && a["voided_at"].is_null() {
            signers.insert(who.to_owned());
        }
    }
    signers.len()
}

fn batch_signature_holds(batch: &Value, key: &Value, parts: &Value, hash: &str) -> bool {
    let statement = &batch["statement"];
    let lists = statement["operations"].as_array().is_some_and(|ops| {
        ops.iter().any(|o| {
            o["operation_id"] == parts["snapshot"]["members"]["operation_id"]
                && o["payload_hash"].as_str() == Some(hash)
        })
    });
    let verifies = match (
        public_key(key),
        batch["signature"].as_str().and_then(Signature::parse),
    ) {
        (Some(k), Some(s)) => k.verifies(canonical_json(statement).as_bytes(), &s),
        _ => false,
    };
    lists && verifies && batch["key_id"] == key["key_id"]
}

fn quorum(r: &mut Report, parts: &Value, hash: &str, signed: usize, mandates: &BTreeSet<String>) {
    let applied = &parts["policy"]["applied"];
    let required = applied["approvals_required"].as_u64().unwrap_or(u64::MAX);
    let signatures = applied["signatures_required"].as_u64().unwrap_or(u64::MAX);
    let live: std::collections::BTreeSet<&str> = parts["approvals"]
        .as_array()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter(|a| a["voided_at"].is_null() && a["payload_hash"].as_str() == Some(hash))
        .filter_map(|a| a["principal"].as_str())
        .collect();
    // A mandate counts only when its signature, key and terms held above.
    let by_mandate = parts["operation"]["decided_by"]
        .as_str()
        .and_then(|d| d.strip_prefix("mandate:"))
        .is_some_and(|id| mandates.contains(id));
    let ok = by_mandate || (live.len() as u64 >= required && signed as u64 >= signatures);
    r.check(
        "quorum",
        ok,
        if by_mandate {
            "approved by a mandate listed in the bundle, whose signature and terms hold".to_owned()
        } else {
            format!(
                "{} of {required} approvals, {signed} of {signatures} signed{}",
                live.len(),
                if ok { "" } else { ": NOT met" }
            )
        },
    );
}

fn provider(r: &mut Report, parts: &Value) {
    let operation = &parts["operation"];
    if operation["status"] != "succeeded" {
        return;
    }
    let p = &parts["provider"];
    let object_id = p["object_id"].as_str().unwrap_or_default();
    let c = &p["confirmation"];
    let by = c["by"].as_str().unwrap_or_default();
    let named = c["object_id"].as_str() == Some(object_id)
        && operation["external_id"].as_str() == Some(object_id);
    let ok = !object_id.is_empty() && named && !by.is_empty()
        || (by == "operator" && c["evidence"].as_str().is_some_and(|e| !e.trim().is_empty()));
    r.check(
        "provider",
        ok,
        if ok {
            format!("succeeded with provider object {object_id}, confirmed by {by}")
        } else {
            "the receipt does NOT name the operation's provider object".to_owned()
        },
    );
    let key = p["idempotency_key"].as_str().unwrap_or_default();
    let references = provider_references(parts, c, object_id);
    if !references.is_empty() {
        let ok = references.iter().all(|r| r == key);
        r.check(
            "provider",
            ok,
            if ok {
                format!("the provider's record names this operation's key {key}")
            } else {
                "the provider's record names ANOTHER key".to_owned()
            },
        );
    }
}

/// The references (idempotency keys) the provider's confirming records carry.
fn provider_references(parts: &Value, c: &Value, object_id: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut take = |v: &Value| {
        if let Some(s) = v["reference"].as_str() {
            out.push(s.to_owned());
        }
    };
    match c["by"].as_str() {
        Some("answer") => {
            for a in parts["attempts"].as_array().map_or(&[][..], Vec::as_slice) {
                if a["fence"] == c["fence"] && a["external_id"].as_str() == Some(object_id) {
                    take(&a["response"]);
                }
            }
        }
        Some("webhook") => {
            for w in parts["provider"]["webhooks"]
                .as_array()
                .map_or(&[][..], Vec::as_slice)
            {
                if w["event_id"] == c["webhook_event_id"] {
                    take(w);
                }
            }
        }
        _ => {}
    }
    out
}

fn deployment_signature(r: &mut Report, doc: &Value, trust: &Trust) {
    let s = &doc["signature"];
    let key = s["public_key"].as_str().and_then(PublicKey::parse);
    let trusted = match (trust, &key) {
        (Trust::Keys(keys), Some(k)) => keys.contains(k),
        (Trust::PinnedId(id), Some(k)) => {
            KeyId::parse(id).is_some_and(|id| id == k.key_id()) && s["key_id"] == id.as_str()
        }
        (_, None) => false,
    };
    let verifies = match (&key, s["value"].as_str().and_then(Signature::parse)) {
        (Some(k), Some(sig)) => k.verifies(&signed_bytes(doc), &sig),
        _ => false,
    };
    r.check(
        "signature",
        trusted && verifies,
        match (trusted, verifies) {
            (true, true) => format!(
                "the deployment's evidence key {} signed this document",
                s["key_id"].as_str().unwrap_or("?")
            ),
            (false, _) => "the signing key is NOT the deployment's evidence key".to_owned(),
            (true, false) => {
                "the deployment's signature does NOT verify: the document was changed after signing"
                    .to_owned()
            }
        },
    );
}

fn words(
    r: &mut Report,
    parts: &Value,
    hash: &str,
    signed: usize,
    chains: &Chains,
    mandates: &BTreeSet<String>,
) {
    let members = &parts["snapshot"]["members"];
    let approvers: Vec<&str> = parts["approvals"]
        .as_array()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter(|a| a["voided_at"].is_null())
        .filter_map(|a| a["principal"].as_str())
        .collect();
    r.proves.push(format!(
        "Operation {} of tenant {} ({}) is exactly the snapshot {hash}.",
        members["operation_id"].as_str().unwrap_or("?"),
        members["tenant_id"].as_str().unwrap_or("?"),
        members["action"].as_str().unwrap_or("?"),
    ));
    r.proves.push(format!(
        "It was approved by {} ({} with their own key's signature over this snapshot, each key registered before and not removed at the time), meeting the quorum of policy {}.",
        if approvers.is_empty() { "a mandate".to_owned() } else { approvers.join(", ") },
        signed,
        parts["policy"]["version"],
    ));
    for id in mandates {
        r.proves.push(format!(
            "Mandate {id} was signed by its signer's registered key, valid when it was stored, and its signed terms (action, currency, amount limit, payee, validity window) cover this operation."
        ));
    }
    if chains.legacy.is_empty() {
        r.proves.push(
            "Every key that signed here was registered by an administrator's signature, each administrator's key in turn down to the deployment's evidence key.".to_owned(),
        );
    } else {
        r.proves.push(format!(
            "Every key that signed here was registered by an administrator's signature down to the deployment's evidence key, except {} (registered before registrations were signed).",
            chains.legacy.join(", ")
        ));
    }
    let p = &parts["provider"];
    if parts["operation"]["status"] == "succeeded" {
        r.proves.push(format!(
            "The fleet recorded its success as provider object {}, confirmed by {}.",
            p["object_id"].as_str().unwrap_or("?"),
            p["confirmation"]["by"].as_str().unwrap_or("?"),
        ));
    } else {
        r.proves.push(format!(
            "The fleet recorded it as {}.",
            parts["operation"]["status"].as_str().unwrap_or("?")
        ));
    }
    r.proves.push(
        "Nothing in this document changed since the deployment's evidence key signed it."
            .to_owned(),
    );
}
