//! The rule that decides whether an operation's approvals carry enough signatures to let
//! it run: the API asks it of one approval before recording it, and fleet-execute asks it
//! of every approval of the stored hash right before it calls the provider. Pure: the
//! operation, the approvals, the registered keys and `now` (the database clock) are
//! inputs.
//!
//! An approval's signature counts when all of these hold:
//! - it verifies, with the key it names, over the statement rebuilt from the stored
//!   operation and the expiry recorded with it;
//! - the key is registered for that principal, was registered before the approval was
//!   recorded, and has not been removed since;
//! - the statement's expiry lies after the approval, at most
//!   [`MAX_STATEMENT_LIFETIME_S`](crate::approval_statement::MAX_STATEMENT_LIFETIME_S)
//!   after it, and has not passed;
//! - no other counted signature is by the same principal.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use crate::approval_statement::{
    expiry_in_bounds, ApprovalStatement, StatementSubject, STATEMENT_VERSIONS,
};
use crate::signing::{KeyId, PublicKey, Signature};

/// What an approver presented with their approval: the key, the signature and the
/// expiry of the statement they signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresentedSignature {
    pub key_id: KeyId,
    pub signature: Signature,
    pub expires_at: DateTime<Utc>,
}

/// One approval of the operation's stored hash, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedApproval {
    pub principal: String,
    /// When it was recorded, by the database clock.
    pub at: DateTime<Utc>,
    /// `None` for an unsigned approval (or one whose stored signature cannot be read).
    pub signed: Option<PresentedSignature>,
}

/// A key as registered (`approver_keys`), removed ones included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredKey {
    pub key_id: KeyId,
    pub principal: String,
    pub public_key: PublicKey,
    pub registered_at: DateTime<Utc>,
    pub removed_at: Option<DateTime<Utc>>,
}

/// Why one approval's signature does not count. Codes are stable: they appear in the
/// API's refusals (`field`) and in execute's evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureRefusal {
    Unsigned,
    /// No key of that id is registered.
    UnknownKey,
    /// The key is registered for another principal.
    NotTheApproversKey,
    KeyRemoved,
    /// The key was registered after the approval was recorded.
    KeyRegisteredAfterApproval,
    /// The expiry is not after the approval, or further than the longest lifetime.
    ExpiryOutOfBounds,
    Expired,
    /// It does not verify over the statement rebuilt from the stored operation.
    BadSignature,
    /// Another signature of the same principal was already counted.
    DuplicatePrincipal,
}

impl SignatureRefusal {
    pub fn code(self) -> &'static str {
        match self {
            SignatureRefusal::Unsigned => "unsigned",
            SignatureRefusal::UnknownKey => "unknown_key",
            SignatureRefusal::NotTheApproversKey => "not_the_approvers_key",
            SignatureRefusal::KeyRemoved => "key_removed",
            SignatureRefusal::KeyRegisteredAfterApproval => "key_registered_after_approval",
            SignatureRefusal::ExpiryOutOfBounds => "expiry_out_of_bounds",
            SignatureRefusal::Expired => "expired",
            SignatureRefusal::BadSignature => "bad_signature",
            SignatureRefusal::DuplicatePrincipal => "duplicate_principal",
        }
    }
}

/// The signature of `approval` and the registered key it names, when the key and the
/// expiry let it count at `now`: a key of the approver's own, not removed, registered
/// before the approval was recorded; an expiry after the approval, within the longest
/// lifetime, not yet passed. Whether it verifies, over what, is the caller's to judge.
pub(crate) fn signing_key<'a>(
    approval: &'a RecordedApproval,
    keys: &'a [RegisteredKey],
    now: DateTime<Utc>,
) -> Result<(&'a PresentedSignature, &'a RegisteredKey), SignatureRefusal> {
    let signed = approval.signed.as_ref().ok_or(SignatureRefusal::Unsigned)?;
    let key = keys
        .iter()
        .find(|k| k.key_id == signed.key_id)
        .ok_or(SignatureRefusal::UnknownKey)?;
    if key.principal != approval.principal {
        return Err(SignatureRefusal::NotTheApproversKey);
    }
    if key.removed_at.is_some() {
        return Err(SignatureRefusal::KeyRemoved);
    }
    if key.registered_at >= approval.at {
        return Err(SignatureRefusal::KeyRegisteredAfterApproval);
    }
    if !expiry_in_bounds(signed.expires_at, approval.at) {
        return Err(SignatureRefusal::ExpiryOutOfBounds);
    }
    if signed.expires_at <= now {
        return Err(SignatureRefusal::Expired);
    }
    Ok((signed, key))
}

/// Judges one approval's signature.
pub fn check_signature(
    subject: &StatementSubject<'_>,
    approval: &RecordedApproval,
    keys: &[RegisteredKey],
    now: DateTime<Utc>,
) -> Result<(), SignatureRefusal> {
    let (signed, key) = signing_key(approval, keys, now)?;
    // A signature made under an earlier statement version (before an upgrade) still
    // counts: each version is rebuilt from the same row, and one must verify.
    let verifies = STATEMENT_VERSIONS.iter().any(|version| {
        let statement = ApprovalStatement::derive_as(subject, signed.expires_at, version);
        key.public_key
            .verifies(&statement.to_bytes(), &signed.signature)
    });
    if !verifies {
        return Err(SignatureRefusal::BadSignature);
    }
    Ok(())
}

/// How many distinct principals' signatures count, and why each other one does not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedCount {
    pub valid: usize,
    pub refused: Vec<(String, SignatureRefusal)>,
}

impl SignedCount {
    pub fn meets(&self, required: i16) -> bool {
        i64::try_from(self.valid).unwrap_or(i64::MAX) >= i64::from(required)
    }
}

/// Counts the approvals whose signatures count (see the module's rule).
pub fn count_signed(
    subject: &StatementSubject<'_>,
    approvals: &[RecordedApproval],
    keys: &[RegisteredKey],
    now: DateTime<Utc>,
) -> SignedCount {
    count_judged(
        approvals
            .iter()
            .map(|a| (a, check_signature(subject, a, keys, now))),
    )
}

/// The count of approvals each judged by its own signature's rule: every principal counts
/// once (another of its signatures is refused `DuplicatePrincipal`).
pub(crate) fn count_judged<'a>(
    judged: impl IntoIterator<Item = (&'a RecordedApproval, Result<(), SignatureRefusal>)>,
) -> SignedCount {
    let mut principals = BTreeSet::new();
    let mut refused = Vec::new();
    for (approval, verdict) in judged {
        let judged = verdict.and_then(|()| {
            principals
                .insert(approval.principal.as_str())
                .then_some(())
                .ok_or(SignatureRefusal::DuplicatePrincipal)
        });
        if let Err(why) = judged {
            refused.push((approval.principal.clone(), why));
        }
    }
    SignedCount {
        valid: principals.len(),
        refused,
    }
}

#[cfg(test)]
mod tests;
