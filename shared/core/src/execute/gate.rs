//! The last word before a claimed attempt calls its provider, decided from facts the
//! worker gathered (store reads, signature checks, the provider's own answers): call it,
//! or hold it back and say how the claim ends. The order of the checks is the order of
//! their authority: a row that does not hash to what was approved is never looked at
//! further, and a check that needs the built request comes after the request is built.

use crate::{AttemptOutcome, Reason};

/// What the execute worker checked before the call, in the order [`gate`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreCallFacts {
    /// The stored snapshot still hashes to its approved `payload_hash`.
    pub snapshot_hash_matches: bool,
    /// Enough approvers' signatures of the statement count now; `None` when the policy
    /// asks for no signature.
    pub signatures_hold: Option<bool>,
    /// The standing mandate that approved the operation is its signer's and covers it;
    /// `None` when people approved it.
    pub mandate_holds: Option<bool>,
    /// The stored snapshot makes the action's request.
    pub call_buildable: bool,
    /// A keyed create sent again (not the first attempt): whether the provider still
    /// deduplicates its key. `None` when no earlier request used the key, or the effect
    /// is not a keyed create.
    pub key_trusted_for_resend: Option<bool>,
    /// What was learnt at the moment of the call; `None` when a check above already held
    /// the call back (nothing more is asked of the provider or the database then).
    pub at_call: Option<AtCall>,
}

/// The facts learnt last, right before the request would go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtCall {
    /// Who a charge takes money from, read again from its provider.
    pub payer: Payer,
    /// The mandate that approved the operation was revoked before it could be held for
    /// the call.
    pub mandate_revoked: bool,
    /// The claim waited past the point where its lease is trusted without a renewal.
    pub lease_stalled: bool,
}

/// What a read of a charge's payer said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payer {
    /// The payer is the approved one, or the action names none its provider describes.
    AsApproved,
    /// The payer could not be read: nothing is known, nothing is sent.
    Unreadable,
    /// The payer is not the one approved: the payer check's own outcome is recorded.
    Changed,
}

impl PreCallFacts {
    /// The checks before the moment of the call all let it go ahead: only then is
    /// anything learnt at the call ([`AtCall`]).
    pub fn checks_clear(&self) -> bool {
        self.first_hold().is_none()
    }

    fn first_hold(&self) -> Option<Gate> {
        let escalate = |reason, outcome| Some(Gate::Escalate { reason, outcome });
        if !self.snapshot_hash_matches {
            // Edited behind the trigger's back: what was approved is not what would be
            // sent, and nobody knows what was; a person looks at how it happened.
            return escalate(Reason::SnapshotHashMismatch, AttemptOutcome::Unknown);
        }
        if self.signatures_hold == Some(false) {
            // Whatever the database was made to say, the approvers' signatures do not make
            // the quorum.
            return escalate(
                Reason::ApprovalSignatureInvalid,
                AttemptOutcome::NotExecuted,
            );
        }
        if self.mandate_holds == Some(false) {
            // No signature of the mandate's signer covers this operation.
            return escalate(
                Reason::ApprovalSignatureInvalid,
                AttemptOutcome::NotExecuted,
            );
        }
        if !self.call_buildable {
            // Prepare validated this shape: reaching here is a bug, never a reason to guess.
            return escalate(Reason::UnbuildableRequest, AttemptOutcome::Unknown);
        }
        if self.key_trusted_for_resend == Some(false) {
            // The provider may have forgotten the key: a request now could be a second
            // effect. Only a lookup or a person may decide.
            return escalate(Reason::KeyRetentionPassed, AttemptOutcome::NotExecuted);
        }
        None
    }
}

/// What the claim does: call, or end without a request as the variant says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Call the provider.
    Go,
    /// Send nothing; the row becomes `unknown`, escalated with `reason`, and the claim's
    /// attempt is recorded as `outcome` with `reason` as its detail.
    Escalate {
        reason: Reason,
        outcome: AttemptOutcome,
    },
    /// Send nothing and record the payer check's own outcome (a changed payer cancels, or
    /// waits for a lookup after an uncertain attempt; an unreadable one releases the
    /// claim).
    PayerCheck,
    /// Send nothing: the row is released as `not_executed` for `reason`.
    NotExecuted(Reason),
    /// Send nothing and move nothing: the claim's attempt is recorded as not executed,
    /// the row stays claimed, and reconcile takes it once its lease expires.
    Stalled,
}

/// The decision before the call, from everything checked before it.
pub fn gate(facts: &PreCallFacts) -> Gate {
    if let Some(held) = facts.first_hold() {
        return held;
    }
    let Some(at_call) = facts.at_call else {
        // The worker asks at the call only once the checks clear; without what it learnt
        // there nothing may be sent.
        return Gate::Stalled;
    };
    match at_call.payer {
        Payer::AsApproved => {}
        Payer::Unreadable | Payer::Changed => return Gate::PayerCheck,
    }
    if at_call.mandate_revoked {
        // A revocation committed before the hold stops the call here; one after it waits
        // for the answer.
        return Gate::NotExecuted(Reason::MandateRevoked);
    }
    if at_call.lease_stalled {
        // Nothing was sent, and nothing may be sent now.
        return Gate::Stalled;
    }
    Gate::Go
}

#[cfg(test)]
mod tests;
