//! The statement a person signs to approve several pending operations in one decision:
//! the operations with their payload hashes, how many, and the sum of their amounts per
//! currency (as a bank's batch carries its number of transactions and control sum), until
//! an expiry the signer chose. RFC 8785 canonical JSON, like every signed statement:
//!
//! ```json
//! {"batch_id":"ab_01JF…","count":2,"expires_at":"2026-12-01T18:00:00Z",
//!  "operations":[{"operation_id":"op_…","payload_hash":"sha256:…"},…],
//!  "statement":"fleet.approval_batch.v1","tenant_id":"org_482","totals":{"KZT":2500000}}
//! ```
//!
//! The database counts the one signature as one approval for each listed operation and
//! for no other, and refuses a batch whose count or totals are not those of the operations
//! listed (`migrations/0064_approval_batches.sql`). Pure: the operations' amounts are
//! inputs, read by the signer from the operations it fetched.
//!
//! A batch is signed with the approver's registered key, so each of its approvals counts
//! as a signed approval (`migrations/0074_signed_batches_and_coverage.sql`): execute
//! verifies it before the call with [`check_batch_approval`], over the batch's statement
//! as stored, as [`crate::signed_quorum`] verifies a per-operation signature.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::approval_statement::{
    format_expiry, parse_expiry, StatementSubject, MAX_STATEMENT_LIFETIME_S,
};
use crate::hash::canonical_json;
use crate::money::format_amount;
use crate::signed_quorum::{
    check_signature, count_judged, signing_key, RecordedApproval, RegisteredKey, SignatureRefusal,
    SignedCount,
};

pub const BATCH_STATEMENT: &str = "fleet.approval_batch.v1";

/// The most operations one batch may list.
pub const MAX_BATCH: usize = 500;

/// One operation as the signer read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchItem {
    pub operation_id: String,
    pub payload_hash: String,
    /// Its amount and currency, for an action with an amount.
    pub amount: Option<(i64, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchStatement {
    pub batch_id: String,
    pub tenant_id: String,
    /// Sorted by operation id, each once.
    pub items: Vec<BatchItem>,
    pub expires_at: DateTime<Utc>,
}

impl BatchStatement {
    /// The statement over `items` (sorted, each operation once); `None` when empty or
    /// longer than [`MAX_BATCH`].
    pub fn new(
        batch_id: String,
        tenant_id: String,
        mut items: Vec<BatchItem>,
        expires_at: DateTime<Utc>,
    ) -> Option<BatchStatement> {
        items.sort_by(|a, b| a.operation_id.cmp(&b.operation_id));
        items.dedup_by(|a, b| a.operation_id == b.operation_id);
        (!items.is_empty() && items.len() <= MAX_BATCH).then_some(BatchStatement {
            batch_id,
            tenant_id,
            items,
            expires_at,
        })
    }

    /// The sum of the amounts per currency, in minor units.
    pub fn totals(&self) -> BTreeMap<String, i64> {
        let mut totals = BTreeMap::new();
        for (amount, currency) in self.items.iter().filter_map(|i| i.amount.as_ref()) {
            *totals.entry(currency.clone()).or_insert(0) += amount;
        }
        totals
    }

    pub fn to_json(&self) -> Value {
        json!({
            "statement": BATCH_STATEMENT,
            "batch_id": self.batch_id,
            "tenant_id": self.tenant_id,
            "operations": self.items.iter()
                .map(|i| json!({"operation_id": i.operation_id, "payload_hash": i.payload_hash}))
                .collect::<Vec<_>>(),
            "count": self.items.len(),
            "totals": self.totals(),
            "expires_at": format_expiry(self.expires_at),
        })
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        canonical_json(&self.to_json()).into_bytes()
    }

    pub fn hash(&self) -> String {
        format!("sha256:{}", hex::encode(Sha256::digest(self.to_bytes())))
    }

    /// Whether the expiry is after `now` and at most a day later (a signature is consent
    /// given at one moment, as an approval's).
    pub fn expiry_in_bounds(&self, now: DateTime<Utc>) -> bool {
        self.expires_at > now
            && self.expires_at <= now + chrono::Duration::seconds(MAX_STATEMENT_LIFETIME_S)
    }

    /// The batch in words, as the signer is shown it: the count, the total per currency.
    pub fn to_words(&self) -> String {
        let totals: Vec<String> = self
            .totals()
            .iter()
            .map(|(c, m)| format_amount(*m, c).unwrap_or_else(|| format!("{m} {c}")))
            .collect();
        format!(
            "Approve {} operations of tenant {} in one decision; in all: {}; until {}",
            self.items.len(),
            self.tenant_id,
            if totals.is_empty() {
                "no amounts".to_owned()
            } else {
                totals.join(", ")
            },
            format_expiry(self.expires_at)
        )
    }
}

/// Judges an approval recorded from a signed batch, for the operation `subject`: the
/// batch's `statement` (as stored) is a `fleet.approval_batch.v1` statement of the
/// operation's tenant listing the operation with its stored hash, its expiry is the one
/// recorded with the approval, and the approval's signature verifies over its canonical
/// bytes with the key it names, under the same rules of key and expiry as
/// [`check_signature`]. A statement that does not list this operation signs nothing of it
/// (`BadSignature`).
pub fn check_batch_approval(
    subject: &StatementSubject<'_>,
    statement: &Value,
    approval: &RecordedApproval,
    keys: &[RegisteredKey],
    now: DateTime<Utc>,
) -> Result<(), SignatureRefusal> {
    let (signed, key) = signing_key(approval, keys, now)?;
    let text = |m: &str| statement.get(m).and_then(Value::as_str);
    let lists_it = statement
        .get("operations")
        .and_then(Value::as_array)
        .is_some_and(|ops| {
            ops.iter().any(|o| {
                o.get("operation_id").and_then(Value::as_str) == Some(subject.operation_id)
                    && o.get("payload_hash").and_then(Value::as_str) == Some(subject.payload_hash)
            })
        });
    let of_this_statement = text("statement") == Some(BATCH_STATEMENT)
        && text("tenant_id") == Some(subject.tenant_id)
        && text("expires_at").and_then(parse_expiry) == Some(signed.expires_at)
        && lists_it;
    if !of_this_statement
        || !key
            .public_key
            .verifies(canonical_json(statement).as_bytes(), &signed.signature)
    {
        return Err(SignatureRefusal::BadSignature);
    }
    Ok(())
}

/// [`crate::signed_quorum::count_signed`] over approvals of which some came from signed
/// batches (their batch's statement beside them): each is judged by its own rule, and
/// each principal counts once.
pub fn count_signed_with_batches(
    subject: &StatementSubject<'_>,
    approvals: &[(RecordedApproval, Option<Value>)],
    keys: &[RegisteredKey],
    now: DateTime<Utc>,
) -> SignedCount {
    count_judged(approvals.iter().map(|(approval, batch)| {
        let verdict = match batch {
            Some(statement) => check_batch_approval(subject, statement, approval, keys, now),
            None => check_signature(subject, approval, keys, now),
        };
        (approval, verdict)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn item(op: &str, amount: i64) -> BatchItem {
        BatchItem {
            operation_id: op.to_owned(),
            payload_hash: format!("sha256:{}", "0".repeat(64)),
            amount: Some((amount, "KZT".to_owned())),
        }
    }

    mod signed {
        use super::super::*;
        use crate::approval_statement::parse_expiry;
        use crate::signed_quorum::PresentedSignature;
        use crate::signing::ApproverKey;
        use serde_json::json;

        const OP: &str = "op_01JD5ZQ8J8N0M1Q2R3S4T5V6W7";
        const HASH: &str =
            "sha256:0000000000000000000000000000000000000000000000000000000000000001";

        fn t(text: &str) -> DateTime<Utc> {
            parse_expiry(text).unwrap()
        }

        fn statement(op: &str) -> Value {
            BatchStatement::new(
                "ab_01JF0000000000000000000000".to_owned(),
                "org_482".to_owned(),
                vec![BatchItem {
                    operation_id: op.to_owned(),
                    payload_hash: HASH.to_owned(),
                    amount: Some((150_000_000, "KZT".to_owned())),
                }],
                t("2026-12-01T18:00:00Z"),
            )
            .unwrap()
            .to_json()
        }

        fn approval(key: &ApproverKey, signed: &Value) -> RecordedApproval {
            RecordedApproval {
                principal: "alice".into(),
                at: t("2026-12-01T12:00:00Z"),
                signed: Some(PresentedSignature {
                    key_id: key.public_key().key_id(),
                    signature: key.sign(canonical_json(signed).as_bytes()),
                    expires_at: t("2026-12-01T18:00:00Z"),
                }),
            }
        }

        fn registered(key: &ApproverKey, removed: bool) -> RegisteredKey {
            RegisteredKey {
                key_id: key.public_key().key_id(),
                principal: "alice".into(),
                public_key: key.public_key(),
                registered_at: t("2026-12-01T09:00:00Z"),
                removed_at: removed.then(|| t("2026-12-01T12:10:00Z")),
            }
        }

        #[test]
        fn a_batchs_signature_counts_for_the_operations_it_lists_and_no_other() {
            let key = ApproverKey::from_seed([3; 32]);
            let payload = json!({"amount_minor": 150_000_000, "currency": "KZT"});
            let subject = |op| StatementSubject {
                operation_id: op,
                tenant_id: "org_482",
                action: crate::Action::PaymentCreate,
                target: None,
                payload: &payload,
                payload_hash: HASH,
                payee: None,
            };
            let now = t("2026-12-01T12:30:00Z");
            let st = statement(OP);
            let a = approval(&key, &st);
            let keys = [registered(&key, false)];
            assert_eq!(
                check_batch_approval(&subject(OP), &st, &a, &keys, now),
                Ok(())
            );
            // The same signature does not sign an operation the batch does not list.
            let other = "op_01JD5ZQ8J8N0M1Q2R3S4T5V6W8";
            assert_eq!(
                check_batch_approval(&subject(other), &st, &a, &keys, now),
                Err(SignatureRefusal::BadSignature)
            );
            // A signature over another statement, or by another key, does not verify.
            let forged = approval(&ApproverKey::from_seed([4; 32]), &st);
            let mut forged = forged;
            forged.signed.as_mut().unwrap().key_id = key.public_key().key_id();
            assert_eq!(
                check_batch_approval(&subject(OP), &st, &forged, &keys, now),
                Err(SignatureRefusal::BadSignature)
            );
            // A removed key, an expired batch: nothing.
            assert_eq!(
                check_batch_approval(&subject(OP), &st, &a, &[registered(&key, true)], now),
                Err(SignatureRefusal::KeyRemoved)
            );
            assert_eq!(
                check_batch_approval(&subject(OP), &st, &a, &keys, t("2026-12-01T18:00:00Z")),
                Err(SignatureRefusal::Expired)
            );
            // Counted once per principal, with a per-operation signature beside it.
            let count = count_signed_with_batches(
                &subject(OP),
                &[(a.clone(), Some(st.clone())), (a, Some(st))],
                &keys,
                now,
            );
            assert_eq!(count.valid, 1);
            assert_eq!(count.refused[0].1, SignatureRefusal::DuplicatePrincipal);
        }
    }

    #[test]
    fn the_statement_lists_each_operation_once_with_its_count_and_totals() {
        let at = Utc.with_ymd_and_hms(2026, 12, 1, 18, 0, 0).unwrap();
        let b = BatchStatement::new(
            "ab_01JF0000000000000000000000".to_owned(),
            "org_482".to_owned(),
            vec![item("op_b", 200), item("op_a", 100), item("op_b", 200)],
            at,
        )
        .unwrap();
        let v = b.to_json();
        assert_eq!(v["count"], 2);
        assert_eq!(v["totals"], json!({"KZT": 300}));
        assert_eq!(v["operations"][0]["operation_id"], "op_a");
        assert!(
            b.to_words().contains("Approve 2 operations"),
            "{}",
            b.to_words()
        );
        assert!(BatchStatement::new("ab_x".into(), "t".into(), vec![], at).is_none());
        assert!(b.expiry_in_bounds(at - chrono::Duration::hours(1)));
        assert!(!b.expiry_in_bounds(at));
    }
}
