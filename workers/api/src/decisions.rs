//! The decisions people make on operations (approve, reject, resolve, dispute) as plain
//! async functions that any door can call: the JSON routes of this API, a console's
//! forms. Each one asks the authorization rules (`fleet_core::authz`: role, tenant,
//! maker-checker) first, then decides through the store (one transaction, recording the
//! principal and how it signed in), rings execute when an approval completes the quorum,
//! and answers with the operation's view. Repeating a decision changes nothing and gets
//! the same kind of answer, so a retried request or a double-clicked form is harmless;
//! for an approval, "repeating" means the same principal with the same hash (another hash
//! is `hash_mismatch`, and a rejected, cancelled or expired operation is refused).

use fleet_broker::{Publisher, Queue};
use fleet_core::authz::{self, Actor, Decider, Denial, OperationAction, SignIn};
use fleet_core::{ApprovalStatus, OpKey, OpRef, OperationId, OperationView, Status};
use fleet_store::{
    ApiStore, ApprovalOutcome, DecisionOutcome, RejectOutcome, Resolve, StoredFacts,
};

pub use crate::decision_error::DecisionError;
use crate::signed_approval::{self, SignatureOffer};

/// The longest free text a decision carries (a reason, evidence): enough for a paragraph
/// and a few references, bounded like an intent's rationale.
pub const MAX_TEXT_CHARS: usize = 4096;
/// The longest provider id an operator may record.
pub const MAX_EXTERNAL_ID_CHARS: usize = 255;

/// How a caller names an operation: its id, and the tenant when it named one (`?tenant=`).
/// Ids are unique per tenant only (docs/design.md#tenant-boundaries): the tenant is needed
/// only when two of the caller's tenants hold the id.
#[derive(Debug, Clone, Copy)]
pub struct Addressed<'a> {
    pub id: &'a str,
    pub tenant: Option<&'a str>,
}

impl<'a> Addressed<'a> {
    pub fn new(id: &'a str, tenant: Option<&'a str>) -> Self {
        Addressed { id, tenant }
    }
}

/// Who asks for a decision on which operation: the principal as the rules see it, how it
/// signed in (recorded with the decision), and the operation as it named it.
#[derive(Debug, Clone, Copy)]
pub struct Asking<'a> {
    pub who: Actor<'a>,
    pub signed_in: SignIn,
    pub at: Addressed<'a>,
}

impl Asking<'_> {
    fn decider(&self) -> Decider<'_> {
        Decider::new(self.who.name, self.signed_in)
    }
}

/// The operation of `who`'s tenants that `at` names, with its facts: another tenant's
/// operation is not found, exactly as a free id; an id two of the caller's tenants hold is
/// `operation_id_ambiguous` unless the tenant was named (`fleet_core::authz::locate`).
pub async fn locate(
    store: &ApiStore,
    who: &Actor<'_>,
    at: Addressed<'_>,
) -> Result<(OpKey, StoredFacts), DecisionError> {
    let op = OperationId::parse(at.id).map_err(|_| Denial::NotFound)?;
    let mut found = store.operation_facts(op.as_str(), who.tenants).await?;
    let holders: Vec<String> = found.iter().map(|f| f.tenant_id.clone()).collect();
    let tenant = authz::locate(who, at.tenant, &holders)?.to_owned();
    let facts = found.swap_remove(
        holders
            .iter()
            .position(|t| *t == tenant)
            .expect("located among the holders"),
    );
    Ok((OpKey::new(tenant, op.as_str()), facts))
}

/// A decision's answer: the operation's view after it, and whether this call changed
/// anything (a repeated decision answers the same view with `changed: false`).
#[derive(Debug)]
pub struct Decided {
    pub view: OperationView,
    pub changed: bool,
}

/// The decision functions, with what they need: the store, and a publisher to ring
/// execute. Cheap to clone.
#[derive(Clone)]
pub struct Decisions {
    store: ApiStore,
    publisher: Publisher,
}

/// Free text a person must give: not blank, at most [`MAX_TEXT_CHARS`].
fn text(value: &str, field: &'static str) -> Result<(), DecisionError> {
    let ok = !value.trim().is_empty()
        && value.chars().count() <= MAX_TEXT_CHARS
        && !value.contains('\0');
    ok.then_some(()).ok_or(DecisionError::InvalidField(field))
}

fn external_id(value: &str) -> Result<(), DecisionError> {
    let ok = (1..=MAX_EXTERNAL_ID_CHARS).contains(&value.chars().count())
        && value.chars().all(|c| c.is_ascii_graphic());
    ok.then_some(())
        .ok_or(DecisionError::InvalidField("external_id"))
}

impl Decisions {
    pub fn new(store: ApiStore, publisher: Publisher) -> Self {
        Decisions { store, publisher }
    }

    /// Asks the rules whether the asker may do `what` to the operation it names; an id that
    /// is not even well formed names no operation.
    async fn authorize(
        &self,
        asking: &Asking<'_>,
        what: OperationAction,
    ) -> Result<OpKey, DecisionError> {
        let who = &asking.who;
        authz::may(who, what.api_action())?;
        let (op, stored) = locate(&self.store, who, asking.at).await?;
        authz::may_act_on(who, what, Some(&stored.facts()))?;
        Ok(op)
    }

    /// The answer to a decision taken (`changed`) or repeated: the operation's view now.
    async fn decided(&self, op: OpRef<'_>, changed: bool) -> Result<Decided, DecisionError> {
        let view = self.view(op).await?;
        Ok(Decided { view, changed })
    }

    async fn view(&self, op: OpRef<'_>) -> Result<OperationView, DecisionError> {
        // Authorized a moment ago and operations are never deleted, so it is there.
        self.store
            .operation_view(op)
            .await?
            .ok_or(DecisionError::Denied(Denial::NotFound))
    }

    /// Publishes a doorbell to `queue` (a replayed dead letter's): a bell carries no
    /// authority, the worker reads the operation from Postgres.
    pub(crate) async fn publish(
        &self,
        queue: Queue,
        bell: &[u8],
    ) -> Result<(), fleet_broker::BrokerError> {
        self.publisher.publish(queue, bell).await
    }

    pub(crate) async fn ring_execute(&self, op: OpRef<'_>) {
        if let Err(e) = self.publisher.ring(Queue::OperationsExecute, op).await {
            // The approval is committed; reconcile's sweeper rings approved operations
            // that wait too long (UNSTARTED_REDRIVE_MS).
            tracing::warn!(operation_id = op.operation_id, error = %e, "approved, but the execute bell could not be rung");
        }
    }

    /// The asker approves the snapshot whose hash is `payload_hash`, with the signature
    /// `offered` if any (`crate::signed_approval`). The operation is approved once its
    /// quorum of distinct approvers is reached; the answer's view says how many approvals
    /// it has of how many it needs. Which answer each state gives is
    /// `fleet_core::judge_approval`'s (the decision table in docs/api.md).
    pub async fn approve(
        &self,
        asking: Asking<'_>,
        payload_hash: &str,
        offered: &SignatureOffer<'_>,
    ) -> Result<Decided, DecisionError> {
        let op = self.authorize(&asking, OperationAction::Approve).await?;
        let signed =
            signed_approval::checked(&self.store, op.op(), asking.who.name, payload_hash, offered)
                .await?;
        let outcome = self
            .store
            .approve(op.op(), payload_hash, &asking.decider(), signed.as_ref())
            .await?;
        let (who, signed_in) = (asking.who, asking.signed_in);
        match &outcome {
            ApprovalOutcome::Approved => {
                tracing::info!(operation_id = op.operation_id, principal = who.name, signed_in_with = %signed_in, "approved: quorum reached");
                self.ring_execute(op.op()).await;
            }
            ApprovalOutcome::Counted(quorum) => {
                tracing::info!(operation_id = op.operation_id, principal = who.name, signed_in_with = %signed_in, %quorum, "approval recorded; quorum not reached");
            }
            ApprovalOutcome::AlreadyCounted => {}
            ApprovalOutcome::NotFound => return Err(Denial::NotFound.into()),
            ApprovalOutcome::HashMismatch { .. } => return Err(DecisionError::HashMismatch),
            ApprovalOutcome::Expired => return Err(DecisionError::ApprovalExpired),
            ApprovalOutcome::NotRecordedApprover => return Err(Denial::NotRecordedApprover.into()),
            ApprovalOutcome::NotPending {
                approval_status, ..
            } if *approval_status == ApprovalStatus::Expired => {
                return Err(DecisionError::ApprovalExpired)
            }
            ApprovalOutcome::NotPending { .. } => return Err(DecisionError::NotPending),
        }
        let view = self.view(op.op()).await?;
        // A repeated approval of an approved operation that has not started rings again:
        // the first bell may have been lost, and a second one is harmless.
        if outcome == ApprovalOutcome::AlreadyCounted
            && view.approval_status == ApprovalStatus::Approved
            && view.status == Status::NotStarted
        {
            self.ring_execute(op.op()).await;
        }
        let changed = outcome != ApprovalOutcome::AlreadyCounted;
        Ok(Decided { view, changed })
    }

    /// The asker rejects the operation: it is cancelled, whatever approvals it had.
    pub async fn reject(&self, asking: Asking<'_>, reason: &str) -> Result<Decided, DecisionError> {
        let op = self.authorize(&asking, OperationAction::Reject).await?;
        text(reason, "reason")?;
        let changed = match self
            .store
            .reject(op.op(), &asking.decider(), reason)
            .await?
        {
            RejectOutcome::Rejected => {
                tracing::info!(operation_id = op.operation_id, principal = asking.who.name, signed_in_with = %asking.signed_in, "rejected");
                true
            }
            RejectOutcome::AlreadyRejected => false,
            RejectOutcome::NotFound => return Err(Denial::NotFound.into()),
            RejectOutcome::Expired => return Err(DecisionError::ApprovalExpired),
            RejectOutcome::TooLate { .. } => return Err(DecisionError::AlreadyStarted),
        };
        self.decided(op.op(), changed).await
    }

    /// The asker, an operator, settles the operation from the provider's records.
    pub async fn resolve(
        &self,
        asking: Asking<'_>,
        r: Resolve<'_>,
    ) -> Result<Decided, DecisionError> {
        let op = self.authorize(&asking, OperationAction::Resolve).await?;
        text(r.evidence, "evidence")?;
        if let Some(x) = r.external_id {
            external_id(x)?;
        }
        let outcome = self.store.resolve(op.op(), r, &asking.decider()).await?;
        self.operator_outcome(&asking, op.op(), outcome, "resolved")
            .await
    }

    /// The asker, an operator, takes the operation out of the workers' hands.
    pub async fn dispute(
        &self,
        asking: Asking<'_>,
        reason: &str,
    ) -> Result<Decided, DecisionError> {
        let op = self.authorize(&asking, OperationAction::Dispute).await?;
        text(reason, "reason")?;
        let outcome = self
            .store
            .dispute(op.op(), reason, &asking.decider())
            .await?;
        self.operator_outcome(&asking, op.op(), outcome, "disputed")
            .await
    }

    async fn operator_outcome(
        &self,
        asking: &Asking<'_>,
        op: OpRef<'_>,
        outcome: DecisionOutcome,
        what: &'static str,
    ) -> Result<Decided, DecisionError> {
        let changed = match outcome {
            DecisionOutcome::Moved(to) => {
                tracing::info!(operation_id = op.operation_id, principal = asking.who.name, signed_in_with = %asking.signed_in, to = to.as_str(), "{what} by an operator");
                true
            }
            DecisionOutcome::Already(_) => false,
            DecisionOutcome::NotFound => return Err(Denial::NotFound.into()),
            DecisionOutcome::ExternalIdRequired => {
                return Err(DecisionError::InvalidField("external_id"))
            }
            DecisionOutcome::Refused { .. } => return Err(DecisionError::NotAllowedInStatus),
            DecisionOutcome::Stale => return Err(DecisionError::ChangedMeanwhile),
        };
        self.decided(op, changed).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_text_must_say_something_within_its_bound() {
        assert!(text("wrong beneficiary", "reason").is_ok());
        assert!(text(&"x".repeat(MAX_TEXT_CHARS), "reason").is_ok());
        for bad in ["", "   ", "a\0b", &"x".repeat(MAX_TEXT_CHARS + 1)] {
            assert!(
                matches!(
                    text(bad, "reason"),
                    Err(DecisionError::InvalidField("reason"))
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn an_external_id_is_one_visible_token() {
        assert!(external_id("pay_01JQ8R7D9M").is_ok());
        for bad in [
            "",
            "pay 1",
            "pay\n1",
            &"p".repeat(MAX_EXTERNAL_ID_CHARS + 1),
        ] {
            assert!(external_id(bad).is_err(), "{bad:?}");
        }
    }
}
