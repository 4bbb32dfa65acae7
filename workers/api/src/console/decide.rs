//! The console's one door to decisions: approve, reject, resolve and dispute on behalf of
//! the signed-in principal. Every console form calls exactly these four functions and
//! nothing else writes, so moving decisions to shared decision functions (authorization
//! rules, quorum, the record of how the author signed in) changes this file only.
//!
//! Until then they apply the rules with the store's own functions: the operation must be
//! in one of the principal's tenants (else it is not found), approvers approve and
//! reject, operators resolve and dispute, and whoever submitted an operation never
//! approves it. Each decision is idempotent: the same decision again by the same person
//! is answered as done. An approval does not ring the execute doorbell here (this process
//! has no broker): reconcile's sweeper rings approved operations that have waited
//! `UNSTARTED_REDRIVE_MS`.

use fleet_core::authz::{Decider, SignIn};
use fleet_core::{Event, Role, Status};
use fleet_store::{
    ApprovalOutcome, ConsoleOperation, Principal, RejectOutcome, Store, StoreError, Transition,
    TransitionOutcome,
};
use serde_json::json;

/// Who decides: the authenticated principal and how it signed in (`oidc`).
#[derive(Debug, Clone, Copy)]
pub struct Author<'a> {
    pub principal: &'a Principal,
    pub signed_in_with: &'static str,
}

/// A decision that was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decided {
    /// This call took it.
    Done,
    /// The same person had already taken the same decision: nothing changed.
    AlreadyDone,
}

/// Why a decision was refused; nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no such operation among your tenants")]
    NotFound,
    #[error("your role may not take this decision")]
    RoleNotAllowed,
    #[error("you submitted this operation: another person must approve it")]
    SubmitterCannotApprove,
    #[error("the page you approved from no longer shows the pending snapshot")]
    HashMismatch,
    #[error("the approval is {approval_status} and the operation {status}: it is no longer waiting for a decision")]
    NotPending {
        approval_status: String,
        status: String,
    },
    #[error("the approval window has expired")]
    Expired,
    #[error("the operation is {status}: this decision is not allowed now")]
    TooLate { status: String },
    #[error("{0}")]
    Invalid(&'static str),
}

#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// An operator's settlement of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Succeeded,
    Failed,
    Cancelled,
}

impl Outcome {
    pub fn parse(s: &str) -> Option<Outcome> {
        match s {
            "succeeded" => Some(Outcome::Succeeded),
            "failed" => Some(Outcome::Failed),
            "cancelled" => Some(Outcome::Cancelled),
            _ => None,
        }
    }

    fn event(self) -> Event {
        match self {
            Outcome::Succeeded => Event::OperatorSucceeded,
            Outcome::Failed => Event::OperatorFailed,
            Outcome::Cancelled => Event::OperatorCancelled,
        }
    }

    fn status(self) -> Status {
        match self {
            Outcome::Succeeded => Status::Succeeded,
            Outcome::Failed => Status::Failed,
            Outcome::Cancelled => Status::Cancelled,
        }
    }
}

#[derive(Clone)]
pub struct Decisions {
    store: Store,
}

impl Decisions {
    pub fn new(store: Store) -> Decisions {
        Decisions { store }
    }

    /// The operation, if it is in one of the author's tenants.
    async fn scoped(&self, who: Author<'_>, op: &str) -> Result<ConsoleOperation, DecideError> {
        self.store
            .console_operation(op, &who.principal.tenants)
            .await?
            .ok_or_else(|| Refusal::NotFound.into())
    }

    /// Approves exactly `hash`, the snapshot the person was shown.
    pub async fn approve(
        &self,
        who: Author<'_>,
        op: &str,
        hash: &str,
    ) -> Result<Decided, DecideError> {
        let found = self.scoped(who, op).await?;
        let me = who.principal.name.as_str();
        if who.principal.role != Role::Approver {
            return Err(Refusal::RoleNotAllowed.into());
        }
        if found.view["submitted_by"].as_str() == Some(me) {
            return Err(Refusal::SubmitterCannotApprove.into());
        }
        let decider = Decider { name: me, signed_in_with: SignIn::Oidc };
        match self.store.approve(op, hash, &decider).await? {
            ApprovalOutcome::Approved => Ok(Decided::Done),
            // Recorded toward the quorum; the operation waits for more distinct approvers.
            ApprovalOutcome::Counted(_) => Ok(Decided::Done),
            ApprovalOutcome::AlreadyCounted => Ok(Decided::AlreadyDone),
            ApprovalOutcome::NotFound => Err(Refusal::NotFound.into()),
            ApprovalOutcome::HashMismatch { .. } => Err(Refusal::HashMismatch.into()),
            ApprovalOutcome::Expired => Err(Refusal::Expired.into()),
            ApprovalOutcome::NotPending {
                approval_status,
                status,
            } => {
                let now = self.store.get(op).await?.ok_or(Refusal::NotFound)?;
                let mine = now.approval_status == "approved"
                    && now.approved_hash.as_deref() == Some(hash)
                    && now.decided_by.as_deref() == Some(me);
                if mine {
                    Ok(Decided::AlreadyDone)
                } else {
                    Err(Refusal::NotPending {
                        approval_status,
                        status,
                    }
                    .into())
                }
            }
        }
    }

    /// Rejects an operation that has not started; it is cancelled. A reason is required.
    pub async fn reject(
        &self,
        who: Author<'_>,
        op: &str,
        reason: &str,
    ) -> Result<Decided, DecideError> {
        let row = self.scoped(who, op).await?.row;
        let me = who.principal.name.as_str();
        if who.principal.role != Role::Approver {
            return Err(Refusal::RoleNotAllowed.into());
        }
        let reason = required(reason, "a reason is required")?;
        if row.approval_status == "rejected" && row.decided_by.as_deref() == Some(me) {
            return Ok(Decided::AlreadyDone);
        }
        let decider = Decider { name: me, signed_in_with: SignIn::Oidc };
        match self.store.reject(op, &decider, reason).await? {
            RejectOutcome::Rejected => Ok(Decided::Done),
            RejectOutcome::AlreadyRejected => Ok(Decided::AlreadyDone),
            RejectOutcome::NotFound => Err(Refusal::NotFound.into()),
            RejectOutcome::TooLate { status } => Err(Refusal::TooLate { status }.into()),
        }
    }

    /// Settles an operation by hand, with evidence (and the provider's id of the effect
    /// when it succeeded).
    pub async fn resolve(
        &self,
        who: Author<'_>,
        op: &str,
        outcome: Outcome,
        external_id: Option<&str>,
        evidence: &str,
    ) -> Result<Decided, DecideError> {
        let row = self.scoped(who, op).await?.row;
        if who.principal.role != Role::Operator {
            return Err(Refusal::RoleNotAllowed.into());
        }
        let evidence = required(evidence, "evidence is required")?;
        let external_id = external_id.map(str::trim).filter(|e| !e.is_empty());
        if outcome == Outcome::Succeeded && external_id.is_none() && row.external_id.is_none() {
            return Err(Refusal::Invalid(
                "resolving as succeeded needs the provider's id of the effect",
            )
            .into());
        }
        if row.status() == outcome.status()
            && row
                .escalated_at
                .is_none_or(|e| row.resolved_at.is_some_and(|r| r >= e))
        {
            return Ok(Decided::AlreadyDone);
        }
        let actor = format!("operator:{}", who.principal.name);
        let t = Transition {
            reason: Some("operator_resolution"),
            evidence: Some(json!({ "evidence": evidence, "signed_in_with": who.signed_in_with })),
            external_id,
            ..Transition::new(op, row.status(), row.fence, outcome.event(), &actor)
        };
        self.moved(op, self.store.transition(t, None).await?).await
    }

    /// Takes an operation out of the workers' hands for investigation.
    pub async fn dispute(
        &self,
        who: Author<'_>,
        op: &str,
        reason: &str,
    ) -> Result<Decided, DecideError> {
        let row = self.scoped(who, op).await?.row;
        if who.principal.role != Role::Operator {
            return Err(Refusal::RoleNotAllowed.into());
        }
        let reason = required(reason, "a reason is required")?;
        if row.status() == Status::Disputed {
            return Ok(Decided::AlreadyDone);
        }
        let actor = format!("operator:{}", who.principal.name);
        let t = Transition {
            reason: Some("disputed"),
            evidence: Some(json!({ "reason": reason, "signed_in_with": who.signed_in_with })),
            ..Transition::new(op, row.status(), row.fence, Event::OperatorDispute, &actor)
        };
        self.moved(op, self.store.transition(t, None).await?).await
    }

    async fn moved(&self, op: &str, outcome: TransitionOutcome) -> Result<Decided, DecideError> {
        match outcome {
            TransitionOutcome::Moved { .. } => Ok(Decided::Done),
            TransitionOutcome::Refused(_) | TransitionOutcome::Stale => {
                let now = self.store.get(op).await?.ok_or(Refusal::NotFound)?;
                Err(Refusal::TooLate { status: now.status }.into())
            }
        }
    }
}

/// Longest free text (a reason, evidence) a decision records, in characters.
pub const MAX_DECISION_TEXT_CHARS: usize = 2000;

fn required<'t>(text: &'t str, missing: &'static str) -> Result<&'t str, Refusal> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Refusal::Invalid(missing));
    }
    if text.chars().count() > MAX_DECISION_TEXT_CHARS || text.contains('\0') {
        return Err(Refusal::Invalid(
            "the text is longer than 2000 characters or holds a NUL",
        ));
    }
    Ok(text)
}
