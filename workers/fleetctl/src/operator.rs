//! Operator decisions on operations the workers cannot settle: resolve with evidence,
//! dispute, or ask reconcile to look again now. Each decision is an operation_events row
//! with its actor; the state machine decides what is allowed. (The CLI exports no
//! metrics: reconcile counts operator decisions from these rows.)

use anyhow::bail;
use clap::ValueEnum;
use fleet_broker::{Publisher, Queue};
use fleet_core::{Doorbell, Event, OperationId};
use fleet_store::{Store, Transition, TransitionOutcome};
use serde_json::json;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Resolution {
    Succeeded,
    Failed,
    Cancelled,
}

impl Resolution {
    fn event(self) -> Event {
        match self {
            Resolution::Succeeded => Event::OperatorSucceeded,
            Resolution::Failed => Event::OperatorFailed,
            Resolution::Cancelled => Event::OperatorCancelled,
        }
    }
}

pub struct Resolve<'a> {
    pub op: &'a str,
    pub outcome: Resolution,
    pub external_id: Option<&'a str>,
    pub evidence: &'a str,
    pub by: &'a str,
}

pub async fn resolve(store: &Store, r: Resolve<'_>) -> anyhow::Result<()> {
    let Some(row) = store.get(r.op).await? else {
        bail!("no operation {}", r.op);
    };
    if r.outcome == Resolution::Succeeded && r.external_id.is_none() && row.external_id.is_none() {
        bail!("resolving as succeeded needs --external-id: the provider's id of the effect");
    }
    let actor = format!("operator:{}", r.by);
    let t = Transition {
        reason: Some("operator_resolution"),
        evidence: Some(json!({ "evidence": r.evidence })),
        external_id: r.external_id,
        ..Transition::new(r.op, row.status(), row.fence, r.outcome.event(), &actor)
    };
    match store.transition(t, None).await? {
        TransitionOutcome::Moved { to, .. } => {
            println!("{} is now {to} (by {})", r.op, r.by);
            Ok(())
        }
        TransitionOutcome::Refused(_) => bail!("refused: {} is {}; an operator resolves unknown, accepted or disputed operations, or confirms a succeeded one", r.op, row.status),
        TransitionOutcome::Stale => bail!("{} changed while you decided; look at `fleetctl show {}` again", r.op, r.op),
    }
}

pub async fn dispute(store: &Store, op: &str, by: &str, reason: &str) -> anyhow::Result<()> {
    let Some(row) = store.get(op).await? else {
        bail!("no operation {op}");
    };
    let actor = format!("operator:{by}");
    let t = Transition {
        reason: Some("disputed"),
        evidence: Some(json!({ "reason": reason })),
        ..Transition::new(op, row.status(), row.fence, Event::OperatorDispute, &actor)
    };
    match store.transition(t, None).await? {
        TransitionOutcome::Moved { .. } => {
            println!("{op} is disputed; workers will not move it again");
            Ok(())
        }
        TransitionOutcome::Refused(_) => bail!("refused: {op} is already final ({})", row.status),
        TransitionOutcome::Stale => bail!("{op} changed while you decided; look again"),
    }
}

/// Rings the reconcile doorbell now instead of waiting for the sweeper. An id with no
/// operation behind it is an error: the doorbell would be consumed and do nothing, and the
/// operator would believe a lookup was asked for.
pub async fn reconcile(store: &Store, publisher: &Publisher, op: &str) -> anyhow::Result<()> {
    let id = OperationId::parse(op).map_err(anyhow::Error::msg)?;
    if store.get(op).await?.is_none() {
        bail!("no operation {op}");
    }
    publisher.publish(Queue::OperationsReconcile, &Doorbell::new(&id).to_bytes()).await?;
    println!("reconcile rung for {op}");
    Ok(())
}
