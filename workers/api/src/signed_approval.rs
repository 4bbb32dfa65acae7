//! The signature an approver may send with an approval, checked before anything is
//! recorded: against the key registered for the *authenticated* principal, over the
//! statement rebuilt from the stored operation (`fleet_core::approval_statement`), by the
//! same rule fleet-execute applies again before its call (`fleet_core::check_signature`).
//!
//! On an operation whose policy asks for signed approvals, an unsigned approval is refused
//! (`signature_required`): the approver's one approval would otherwise be spent on a row
//! that can never count, and they could not sign it afterwards. Where the policy asks for
//! none, a signature is still checked when one is given, and recorded.

use fleet_core::approval_statement::parse_expiry;
use fleet_core::{
    check_signature, ApprovalStatus, KeyId, OpRef, PresentedSignature, RecordedApproval, Signature,
    SignatureRefusal, Status,
};
use fleet_store::ApiStore;

use crate::decision_error::DecisionError;

/// What the approve body carries besides the hash, as sent (all three or none).
#[derive(Debug, Clone, Default)]
pub struct SignatureOffer<'a> {
    pub key_id: Option<&'a str>,
    pub signature: Option<&'a str>,
    pub expires_at: Option<&'a str>,
}

impl SignatureOffer<'_> {
    fn is_empty(&self) -> bool {
        self.key_id.is_none() && self.signature.is_none() && self.expires_at.is_none()
    }
}

/// The member of the body a refused signature is about.
fn field_of(refusal: SignatureRefusal) -> &'static str {
    match refusal {
        SignatureRefusal::Unsigned | SignatureRefusal::BadSignature => "signature",
        SignatureRefusal::UnknownKey
        | SignatureRefusal::NotTheApproversKey
        | SignatureRefusal::KeyRemoved
        | SignatureRefusal::KeyRegisteredAfterApproval
        | SignatureRefusal::DuplicatePrincipal => "key_id",
        SignatureRefusal::ExpiryOutOfBounds | SignatureRefusal::Expired => "expires_at",
    }
}

/// Reads the offer's three values; a missing or malformed one names its field.
fn parse(offer: &SignatureOffer<'_>) -> Result<PresentedSignature, DecisionError> {
    let bad = DecisionError::SignatureInvalid;
    Ok(PresentedSignature {
        key_id: offer.key_id.and_then(KeyId::parse).ok_or(bad("key_id"))?,
        signature: offer
            .signature
            .and_then(Signature::parse)
            .ok_or(bad("signature"))?,
        expires_at: offer
            .expires_at
            .and_then(parse_expiry)
            .ok_or(bad("expires_at"))?,
    })
}

/// The signature to record with `principal`'s approval of `payload_hash`, once checked;
/// `None` for an unsigned approval the operation allows, and for one the store will refuse.
pub async fn checked(
    store: &ApiStore,
    op: OpRef<'_>,
    principal: &str,
    payload_hash: &str,
    offer: &SignatureOffer<'_>,
) -> Result<Option<PresentedSignature>, DecisionError> {
    let Some(row) = store.get(op).await? else {
        return Ok(None);
    };
    // An approval that cannot be recorded anyway (another hash, or an operation no longer
    // waiting for approvals) is left to the store, whose answer says why (`hash_mismatch`,
    // `not_pending`, `approval_expired`, or a repeat that changes nothing).
    let waiting = row.approval_status == ApprovalStatus::Pending
        && row.status == Status::NotStarted
        && !row.approval_expired;
    if row.payload_hash != payload_hash || !waiting {
        return Ok(None);
    }
    if offer.is_empty() {
        return if row.signatures_required > 0 {
            Err(DecisionError::SignatureRequired)
        } else {
            Ok(None)
        };
    }
    let presented = parse(offer)?;
    let key_id = presented.key_id.clone();
    let (key, now) = store.approver_key(&key_id).await?;
    let subject = row.statement_subject();
    // Judged as if recorded now, by the database clock: the approval row's own time is
    // a moment later, which only shortens the statement's remaining life.
    let approval = RecordedApproval {
        principal: principal.to_owned(),
        at: now,
        signed: Some(presented.clone()),
    };
    let keys: Vec<_> = key.into_iter().collect();
    match check_signature(&subject, &approval, &keys, now) {
        Ok(()) => Ok(Some(presented)),
        Err(refusal) => {
            tracing::info!(operation_id = %op, principal, key_id = %key_id, refusal = refusal.code(), "signed approval refused");
            Err(DecisionError::SignatureInvalid(field_of(refusal)))
        }
    }
}
