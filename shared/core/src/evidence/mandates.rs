//! Checking, offline, each standing mandate an operation was approved under: the signer's
//! signature over the mandate's statement with the signer's key (and that key's
//! registration), the key valid when the mandate was stored, and the signed terms
//! covering this operation (action, tenant, whose intents, currency, amount within the
//! per-operation limit, payee, and the time of use within the validity window).

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::bundle_keys::{key_valid_at, public_key};
use super::chain::Chains;
use super::findings::Report;
use crate::catalogue::Action;
use crate::hash::canonical_json;
use crate::mandate::{Mandate, MandatedOperation};
use crate::signing::Signature;

/// Checks every mandate listed; returns the ids of those that hold in every respect.
pub(super) fn check(r: &mut Report, parts: &Value, chains: &mut Chains) -> BTreeSet<String> {
    let mut holding = BTreeSet::new();
    for m in parts["mandates"].as_array().map_or(&[][..], Vec::as_slice) {
        let id = m["mandate_id"].as_str().unwrap_or("?");
        let key = &m["key"];
        let public = public_key(key);
        let verifies = match (&public, m["signature"].as_str().and_then(Signature::parse)) {
            (Some(k), Some(s)) => k.verifies(canonical_json(&m["statement"]).as_bytes(), &s),
            _ => false,
        };
        let theirs = public.as_ref().map(|k| k.key_id().as_str().to_owned())
            == m["key_id"].as_str().map(str::to_owned)
            && key["key_id"] == m["key_id"]
            && key["principal"] == m["signed_by"];
        let signed = r.check(
            &format!("mandate {id}"),
            verifies && theirs,
            if verifies && theirs {
                format!(
                    "{} signed it with key {}: the signature verifies over its statement",
                    m["signed_by"].as_str().unwrap_or("?"),
                    m["key_id"].as_str().unwrap_or("?")
                )
            } else {
                "the mandate's signature does NOT verify (statement, signature or key changed, or the key is not the signer's)".to_owned()
            },
        );
        let stored_at = m["stored_at"].as_str().unwrap_or_default();
        let valid = r.check(
            &format!("key of mandate {id}"),
            key_valid_at(key, stored_at),
            if key_valid_at(key, stored_at) {
                format!(
                    "registered before the mandate was stored ({stored_at}) and not removed then"
                )
            } else {
                "NOT valid when the mandate was stored".to_owned()
            },
        );
        let vouched = key.is_object() && chains.check(r, key);
        let (covered, words) = terms(m, parts);
        let covered = r.check(&format!("terms of mandate {id}"), covered, words);
        if signed && valid && vouched && covered {
            holding.insert(id.to_owned());
        }
    }
    holding
}

/// Whether the mandate's signed terms cover the operation, in words either way.
fn terms(m: &Value, parts: &Value) -> (bool, String) {
    let Ok(mandate) = Mandate::from_json(&m["statement"]) else {
        return (
            false,
            "the mandate's statement is NOT one this verifier reads".to_owned(),
        );
    };
    let members = &parts["snapshot"]["members"];
    let Some(action) = members["action"].as_str().and_then(Action::parse) else {
        return (
            false,
            "the operation's action is NOT one this verifier knows".to_owned(),
        );
    };
    let payload = &members["payload"];
    let op = MandatedOperation {
        tenant_id: members["tenant_id"].as_str().unwrap_or_default(),
        action,
        payload,
        payee: Some(&parts["payee"]).filter(|p| !p.is_null()),
        submitted_by: parts["operation"]["submitted_by"].as_str(),
    };
    let used_at = m["at"]
        .as_str()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc));
    let amount = payload["amount_minor"].as_i64();
    let checks = [
        (m["mandate_id"].as_str() == Some(mandate.mandate_id.as_str()), "it is another mandate's statement"),
        (mandate.covers(&op), "its terms (tenant, action, principal, currency, amount limit or payee) do NOT cover this operation"),
        (m["amount_minor"].as_i64() == amount, "the amount used is NOT the operation's"),
        (used_at.is_some_and(|t| mandate.in_window(t)), "it was used OUTSIDE its validity window"),
    ];
    if let Some((_, why)) = checks.iter().find(|(ok, _)| !ok) {
        return (false, (*why).to_owned());
    }
    (
        true,
        format!(
            "its signed terms cover this operation: {} of {} {} (at most {} each), payee {}, used {} within {} to {}",
            action.wire_name(),
            amount.unwrap_or_default(),
            mandate.currency,
            mandate.per_operation_max_minor,
            parts["payee"]["id"]
                .as_str()
                .or(payload["beneficiary_id"].as_str())
                .unwrap_or("?"),
            m["at"].as_str().unwrap_or("?"),
            crate::approval_statement::format_expiry(mandate.valid_from),
            crate::approval_statement::format_expiry(mandate.valid_until),
        ),
    )
}
