//! Approvers' keys and signed approvals for tests: a key registered as an administrator
//! registers it (signed by the tests' administrator, whose own key the tests' root key
//! registered), and the approve body an approver's machine would send.

use chrono::{DateTime, Utc};
use fleet_core::approval_statement::format_expiry;
use fleet_core::key_registration::RegistrarKey;
use fleet_core::payee::{NameCheck, PayeeEvidence};
use fleet_core::{ApprovalStatement, ApproverKey, Role, StatementSubject};
use fleet_store::KeyAdded;
use serde_json::{json, Value};

use crate::{hash_of, op_of, TestFleet, TENANT};

/// The statement about the operation `intent` names (its stored snapshot is the intent's,
/// its payee the simulator's seeded one with its name check, as prepare found it), valid
/// until `expires_at`.
pub fn statement_of(intent: &Value, expires_at: DateTime<Utc>) -> ApprovalStatement {
    let (op, hash) = (op_of(intent), hash_of(intent));
    let payee = intent["payload"]["beneficiary_id"].as_str().map(|id| {
        let asked = intent["payload"]["beneficiary_name"].as_str();
        let seeded = fleet_provider_sim::seeded_beneficiary_asked(id, asked);
        let evidence = PayeeEvidence::of_lookup(id, Ok(seeded.as_ref()), Utc::now());
        match intent["action"].as_str() {
            Some("payment.create") => {
                evidence.with_name_check(NameCheck::judge(asked, seeded.as_ref()))
            }
            _ => evidence,
        }
        .to_json()
    });
    let subject = StatementSubject {
        operation_id: &op,
        tenant_id: intent["tenant_id"].as_str().unwrap(),
        action: fleet_core::Action::parse(intent["action"].as_str().unwrap()).unwrap(),
        target: intent["target"].as_str(),
        payload: &intent["payload"],
        payload_hash: &hash,
        payee: payee.as_ref(),
    };
    ApprovalStatement::derive(&subject, expires_at)
}

/// The approve body carrying `key`'s signature of the statement about `intent`.
pub fn signed_approval(intent: &Value, key: &ApproverKey, expires_at: DateTime<Utc>) -> Value {
    let statement = statement_of(intent, expires_at);
    json!({
        "payload_hash": hash_of(intent),
        "key_id": key.public_key().key_id().as_str(),
        "signature": key.sign(&statement.to_bytes()).to_text(),
        "expires_at": format_expiry(statement.expires_at),
    })
}

/// The administrator every test registration is signed by.
pub const TEST_REGISTRAR: &str = "test-registrar";

/// The tests' root (standing in for a deployment's evidence key) and administrator keys:
/// fixed, so any test process finds the same ones in its database.
pub fn test_root_key() -> ApproverKey {
    ApproverKey::from_seed([0x52; 32])
}

pub fn test_registrar_key() -> ApproverKey {
    ApproverKey::from_seed([0x41; 32])
}

/// An approver of [`TENANT`] who signs: their token and their registered key.
pub struct Signer {
    pub token: String,
    pub key: ApproverKey,
}

impl TestFleet {
    /// `name`, an approver of [`TENANT`] with a new token and a key registered now by the
    /// tests' administrator.
    pub async fn signer(&self, name: &str) -> Signer {
        Signer {
            token: self.token(name, Role::Approver, &[TENANT]).await,
            key: self.register_key(name).await,
        }
    }

    /// How many of `name`'s approver keys are not removed.
    pub async fn live_keys(&self, name: &str) -> i64 {
        self.sql()
            .await
            .query_one(
                "SELECT count(*) FROM approver_keys WHERE principal = $1 AND removed_at IS NULL",
                &[&name],
            )
            .await
            .unwrap()
            .get(0)
    }

    /// A new key for the approver `principal`, registered now by the tests'
    /// administrator.
    pub async fn register_key(&self, principal: &str) -> ApproverKey {
        let admin = self.test_registrar().await;
        self.register_key_by(principal, RegistrarKey::Admin(&admin))
            .await
    }

    /// A new key for `principal`, registered now with `registrar`'s signature.
    pub async fn register_key_by(
        &self,
        principal: &str,
        registrar: RegistrarKey<'_>,
    ) -> ApproverKey {
        let key = fleetctl::key::new_key().unwrap();
        match self
            .store
            .add_approver_key(principal, &key.public_key(), "test-admin", registrar)
            .await
            .unwrap()
        {
            KeyAdded::Added { .. } => key,
            other => panic!("registering a key for {principal}: {other:?}"),
        }
    }

    /// The tests' administrator ([`TEST_REGISTRAR`]), with their key registered by the
    /// tests' root key in this fleet's database (once): the key that signs registrations.
    pub async fn test_registrar(&self) -> ApproverKey {
        let admin = test_registrar_key();
        fleetctl::key::bootstrap_admin(
            &self.store,
            TEST_REGISTRAR,
            &admin,
            &test_root_key(),
            "test-owner",
        )
        .await
        .expect("the tests' administrator and their key");
        admin
    }

    /// A file holding the tests' administrator's key (mode 0600), with the key registered
    /// in this fleet: what `fleetctl key add | accept` is given (`FLEET_ADMIN_KEY_FILE`).
    pub async fn test_registrar_file(&self) -> std::path::PathBuf {
        let key = self.test_registrar().await;
        let path = std::env::temp_dir().join(format!(
            "fleet-tests-registrar-{}.key",
            key.public_key().key_id().as_str().replace(':', "-")
        ));
        if !path.exists() {
            // Tests in parallel may write the same key at once: each writes its own file
            // and renames it into place, so a reader never sees a half-written one.
            let mine = path.with_extension(format!("{}.tmp", ulid::Ulid::new()));
            fleetctl::key::write_private(&mine, &key).unwrap();
            std::fs::rename(&mine, &path).unwrap();
        }
        path
    }
}
