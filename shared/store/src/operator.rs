//! Operator decisions on operations the workers cannot settle: resolve with evidence, or
//! dispute. Each is one transition (the state machine says what is allowed) with the
//! operator as its actor and how they signed in. (Reconcile counts operator decisions
//! from these rows.) Who may decide is not this module's question: callers ask
//! `fleet_core::authz` first.

use fleet_core::confirmation::Confirmation;
use fleet_core::dispute::{judge_dispute, DisputeVerdict};
use fleet_core::{Decider, Event, OpRef, Resolution, Status};
use serde_json::json;

use crate::component::SettleByOperator;
use crate::StoreAs;
use crate::{StoreError, Transition, TransitionOutcome};
use fleet_core::Reason;

/// An operator's resolution, with what backs it.
#[derive(Debug, Clone, Copy)]
pub struct Resolve<'a> {
    pub outcome: Resolution,
    /// The provider's id of the effect (required for `succeeded` unless already recorded).
    pub external_id: Option<&'a str>,
    /// What the operator found (free text, kept in the history).
    pub evidence: &'a str,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecisionOutcome {
    /// The operation moved to this status.
    Moved(Status),
    /// It already is where the decision would put it: nothing changed.
    Already(Status),
    NotFound,
    /// A success without the provider's id of the effect, and none recorded.
    ExternalIdRequired,
    /// The state machine does not allow this decision from the operation's status.
    Refused {
        status: Status,
    },
    /// The operation changed while the decision was made: look again.
    Stale,
}

fn operator(by: &Decider<'_>) -> String {
    format!("operator:{}", by.name)
}

impl<R: SettleByOperator> StoreAs<R> {
    /// Settles the operation as `r.outcome`, with the evidence in its history.
    pub async fn resolve(
        &self,
        op: OpRef<'_>,
        r: Resolve<'_>,
        by: &Decider<'_>,
    ) -> Result<DecisionOutcome, StoreError> {
        let Some(row) = self.get(op).await? else {
            return Ok(DecisionOutcome::NotFound);
        };
        if r.outcome
            .needs_external_id(r.external_id.is_some(), row.external_id.is_some())
        {
            return Ok(DecisionOutcome::ExternalIdRequired);
        }
        let actor = operator(by);
        let t = Transition {
            reason: Some(Reason::OperatorResolution),
            evidence: Some(json!({ "evidence": r.evidence })),
            external_id: r.external_id,
            signed_in_with: Some(by.signed_in_with.as_str()),
            // A success stands on what the operator stated (the database refuses it blank).
            confirmation: Some(Confirmation::Operator {
                object_id: r
                    .external_id
                    .map(str::to_owned)
                    .or_else(|| row.external_id.clone()),
                evidence: r.evidence.to_owned(),
            }),
            ..Transition::new(op, row.status, row.fence, r.outcome.event(), &actor)
        };
        Ok(match self.transition(t, None).await? {
            TransitionOutcome::Moved { to, .. } => DecisionOutcome::Moved(to),
            // Already failed or cancelled, as asked: a repeated decision changes nothing.
            TransitionOutcome::Refused(_) if row.status == r.outcome.status() => {
                DecisionOutcome::Already(row.status)
            }
            TransitionOutcome::Refused(_) => DecisionOutcome::Refused { status: row.status },
            TransitionOutcome::Stale => DecisionOutcome::Stale,
        })
    }

    /// Takes the operation out of the workers' hands for investigation, as
    /// `fleet_core::dispute` judges the row as read.
    pub async fn dispute(
        &self,
        op: OpRef<'_>,
        reason: &str,
        by: &Decider<'_>,
    ) -> Result<DecisionOutcome, StoreError> {
        let Some(row) = self.get(op).await? else {
            return Ok(DecisionOutcome::NotFound);
        };
        match judge_dispute(row.status) {
            DisputeVerdict::Dispute => {}
            DisputeVerdict::AlreadyDisputed => return Ok(DecisionOutcome::Already(row.status)),
            DisputeVerdict::Refused => return Ok(DecisionOutcome::Refused { status: row.status }),
        }
        let actor = operator(by);
        let t = Transition {
            reason: Some(Reason::Disputed),
            evidence: Some(json!({ "reason": reason })),
            signed_in_with: Some(by.signed_in_with.as_str()),
            ..Transition::new(op, row.status, row.fence, Event::OperatorDispute, &actor)
        };
        Ok(match self.transition(t, None).await? {
            TransitionOutcome::Moved { to, .. } => DecisionOutcome::Moved(to),
            TransitionOutcome::Refused(_) => DecisionOutcome::Refused { status: row.status },
            TransitionOutcome::Stale => DecisionOutcome::Stale,
        })
    }
}
