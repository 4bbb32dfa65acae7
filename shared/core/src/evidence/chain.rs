//! Checking a key's registration offline: the statement its registrar signed describes
//! the key, the signature verifies with the registrar's key, the registrar was an
//! administrator whose key was valid when they signed, and so on down to the deployment's
//! evidence key, which the bundle is checked against. Each key is reported once
//! (`registration of KEY_ID`), however many approvals or mandates it signed.

use std::collections::BTreeMap;

use serde_json::Value;

use super::bundle_keys::{key_valid_at, public_key};
use super::findings::Report;
use crate::key_registration::{format_time, KeyRegistration, Registrar};
use crate::signing::{PublicKey, Signature};

/// The longest chain followed; a bundle's chain is a handful of links.
const MAX_DEPTH: usize = 32;

/// The keys a root registration may be signed by, and the verdicts reached so far.
pub(super) struct Chains {
    roots: Vec<PublicKey>,
    checked: BTreeMap<String, bool>,
    /// Keys whose registration predates signed registrations.
    pub legacy: Vec<String>,
}

impl Chains {
    pub fn new(roots: Vec<PublicKey>) -> Chains {
        Chains {
            roots,
            checked: BTreeMap::new(),
            legacy: Vec::new(),
        }
    }

    /// Whether the registration of `key` (a key as the bundle carries it) holds, down to
    /// the root; each key's verdict is reported once.
    pub fn check(&mut self, r: &mut Report, key: &Value) -> bool {
        self.check_at(r, key, 0)
    }

    fn check_at(&mut self, r: &mut Report, key: &Value, depth: usize) -> bool {
        let id = key["key_id"].as_str().unwrap_or("?").to_owned();
        if let Some(done) = self.checked.get(&id) {
            return *done;
        }
        let part = format!("registration of {id}");
        // Unsigned: a key registered before registrations were signed, or a key in a
        // bundle made before bundles carried registrations (no `registration_legacy`).
        let unsigned = key["registration_legacy"] == true
            || (key.get("registration_legacy").is_none() && key["registration_signed"] == false);
        if unsigned {
            self.legacy.push(id.clone());
            self.checked.insert(id, true);
            r.check(
                &part,
                true,
                format!(
                    "NOT signed: registered before registrations were signed; only the database's record says {} registered it at {}",
                    key["registered_by"].as_str().unwrap_or("?"),
                    key["registered_at"].as_str().unwrap_or("?"),
                ),
            );
            return true;
        }
        let (ok, words) = match self.link(r, key, depth) {
            Ok(words) => (true, words),
            Err(words) => (false, words),
        };
        self.checked.insert(id, ok);
        r.check(&part, ok, words);
        ok
    }

    /// One link: `Ok` says who signed it, `Err` what does not hold.
    fn link(&mut self, r: &mut Report, key: &Value, depth: usize) -> Result<String, String> {
        let statement = KeyRegistration::from_json(&key["registration"])
            .ok_or("NO signed registration this verifier reads")?;
        let public = public_key(key).ok_or("its public key is not one this verifier reads")?;
        let describes = statement.key == public
            && key["key_id"].as_str() == Some(public.key_id().as_str())
            && key["principal"].as_str() == Some(statement.principal.as_str())
            && key["registered_at"].as_str() == Some(format_time(statement.registered_at).as_str());
        if !describes {
            return Err("the signed registration does NOT describe this key (key, principal or time changed)".into());
        }
        let signature = key["registration_signature"]
            .as_str()
            .and_then(Signature::parse)
            .ok_or("the registration's signature is missing or unreadable")?;
        let bytes = statement.to_bytes();
        match &statement.registrar {
            Registrar::EvidenceKey { key: root } => {
                if statement.role != "admin" {
                    return Err("the deployment's evidence key registered a key that is NOT an administrator's".into());
                }
                if !root.verifies(&bytes, &signature) {
                    return Err("the registration's signature does NOT verify with the deployment's evidence key it names".into());
                }
                if !self.roots.contains(root) {
                    return Err(format!(
                        "signed by {}, which is NOT the evidence key this bundle is checked against (name an earlier evidence key with --public-key)",
                        root.key_id()
                    ));
                }
                Ok(format!(
                    "{} ({}) was registered at {} with the deployment's evidence key {} (the root)",
                    statement.principal,
                    statement.role,
                    format_time(statement.registered_at),
                    root.key_id()
                ))
            }
            Registrar::Admin { principal, key_id } => {
                let registrar = &key["registrar"];
                if registrar["key_id"].as_str() != Some(key_id.as_str())
                    || registrar["principal"].as_str() != Some(principal.as_str())
                {
                    return Err(format!("the registrar's key {key_id} is NOT in the bundle"));
                }
                let registrar_key = public_key(registrar)
                    .filter(|k| k.key_id() == *key_id)
                    .ok_or("the registrar's key is NOT the one the registration names")?;
                if !registrar_key.verifies(&bytes, &signature) {
                    return Err(format!(
                        "the registration's signature does NOT verify with the registrar {principal}'s key {key_id}"
                    ));
                }
                let when = format_time(statement.registered_at);
                if !key_valid_at(registrar, &when) {
                    return Err(format!(
                        "the registrar {principal}'s key {key_id} was NOT valid at {when}"
                    ));
                }
                if depth >= MAX_DEPTH || !self.check_at(r, registrar, depth + 1) {
                    return Err(format!(
                        "the registrar {principal}'s own key {key_id} is NOT vouched for (its registration fails)"
                    ));
                }
                // A legacy registration says nothing of the role; a signed one must.
                let admin = KeyRegistration::from_json(&registrar["registration"])
                    .is_none_or(|s| s.role == "admin");
                if !admin {
                    return Err(format!("the registrar {principal} is NOT an administrator"));
                }
                Ok(format!(
                    "{} ({}) was registered at {when}, signed by administrator {principal} with key {key_id}",
                    statement.principal, statement.role
                ))
            }
        }
    }
}
