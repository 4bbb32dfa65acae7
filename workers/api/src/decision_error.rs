//! Why a person's decision was not taken, whichever step refused it (the authorization,
//! the signature, the state of the operation, Postgres). Nothing was written for any of
//! them; the API and the console each answer them in their own way.

use fleet_core::authz::Denial;
use fleet_store::StoreError;

/// Why a decision was not taken. Nothing was written for any of these.
#[derive(Debug, thiserror::Error)]
pub enum DecisionError {
    /// Not allowed, or not found among the principal's tenants.
    #[error("{0}")]
    Denied(Denial),
    /// The hash given is not the stored snapshot's: the approver saw something else
    /// (also when the operation was approved since, or by this same approver).
    #[error("hash_mismatch")]
    HashMismatch,
    /// The approval window closed before the quorum was reached.
    #[error("approval_expired")]
    ApprovalExpired,
    /// The approval was rejected, or the operation was cancelled, or it was approved by
    /// others and no longer waits for this approver.
    #[error("not_pending")]
    NotPending,
    /// Execution began or the operation ended: too late to reject.
    #[error("already_started")]
    AlreadyStarted,
    /// The state machine does not allow this decision from the operation's status.
    #[error("not_allowed_in_status")]
    NotAllowedInStatus,
    /// The operation changed while the decision was being made: look again.
    #[error("changed_meanwhile")]
    ChangedMeanwhile,
    /// The operation's policy asks for signed approvals and this one carries no signature.
    #[error("signature_required")]
    SignatureRequired,
    /// The signature given does not count (`field` names the member at fault: `key_id`
    /// unknown, not the caller's, removed or too new; `expires_at` malformed, past or too
    /// far; `signature` malformed or not over the operation's statement).
    #[error("signature_invalid {0}")]
    SignatureInvalid(&'static str),
    /// A value of the request is missing or out of its limits (`field` names it), or a
    /// success is resolved without the provider's id of the effect (`external_id`).
    #[error("invalid_field {0}")]
    InvalidField(&'static str),
    /// Postgres did not answer; nothing was decided.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<Denial> for DecisionError {
    fn from(d: Denial) -> Self {
        DecisionError::Denied(d)
    }
}
