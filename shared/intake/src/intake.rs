//! The intake of one intent.v1, whichever way it came (the `intents.prepare` queue or the
//! HTTP API): validate (the contract, then the capability guard), then write the immutable
//! snapshot, idempotent by operation id, and say what that means for the sender. Every
//! intake calls these functions, so an intent is accepted, refused or found conflicting
//! the same way, writes the same row, and is logged and counted (the
//! `fleet_intents_prepared_total` counter) once, here. Nothing here rings a doorbell: a
//! prepared operation waits for its approvers, and the approval that completes its quorum
//! rings execute.

use fleet_core::catalogue::guard;
use fleet_core::payee::PayeeEvidence;
use fleet_core::{parse_intent, IntakeRefusal, IntentError, ValidIntent};
use fleet_runtime::metric_names as m;
use fleet_store::component::StoreIntents;
use fleet_store::{PrepareOutcome, StoreAs, StoreError};
use tracing::{info, warn};

use crate::checked::{count, counted, CheckedIntent, Intake, IntakeRules, Refusal};
use crate::payee::DirectoryUnreachable;

/// Validates `bytes` as an intent.v1 message, looks its payee up and, if it passes,
/// stores it (the queue's intake: no authenticated submitter).
pub async fn intake<R: StoreIntents>(
    store: &StoreAs<R>,
    rules: &IntakeRules,
    bytes: &[u8],
) -> Intake {
    match validate(bytes, rules) {
        Ok(checked) => match against_world(checked, rules, store).await {
            Ok(checked) => store_intent(store, checked).await,
            Err(fate) => fate,
        },
        Err(refusal) => Intake::Refused(refusal),
    }
}

/// The checks of a validated intent against the world as it is at intake: the policy in
/// force for its tenant and action (`crate::in_force`), the payee's directory
/// ([`with_payee`]), then the fleet's own records ([`against_records`]). What
/// they refuse is not the fate of an intent whose very snapshot is stored already: that
/// is a redelivery or a resend, a no-op as always, even if the payee has since left the
/// directory. `Err` is the intent's fate.
pub async fn against_world<R: StoreIntents>(
    checked: CheckedIntent,
    rules: &IntakeRules,
    store: &StoreAs<R>,
) -> Result<CheckedIntent, Intake> {
    let intent = &checked.intent;
    let in_force = store
        .policy_in_force(&intent.snapshot.tenant_id, intent.action)
        .await
        .map_err(Intake::Unavailable)?;
    against_world_in_force(checked, rules, store, in_force.as_deref()).await
}

/// [`against_world`] for a door that read the policy in force for the intent's tenant and
/// action already (`in_force`; `None`: none is), with its other reads in one round trip.
pub async fn against_world_in_force<R: StoreIntents>(
    checked: CheckedIntent,
    rules: &IntakeRules,
    store: &StoreAs<R>,
    in_force: Option<&str>,
) -> Result<CheckedIntent, Intake> {
    let intent = checked.intent.clone();
    let refused = |refusal: Refusal| unless_prepared_before(store, &intent, refusal);
    let checked = match crate::in_force::judge(checked, in_force) {
        Ok(checked) => checked,
        Err(refusal) => return Err(refused(refusal).await),
    };
    let checked = match with_payee_and_refunded(checked, rules).await {
        Ok(Ok(checked)) => checked,
        Ok(Err(refusal)) => return Err(refused(refusal).await),
        // A resend of a stored snapshot needs no payee: a no-op, as always.
        Err(DirectoryUnreachable) => {
            return Err(prepared_before_or(store, &intent, Intake::DirectoryUnreachable).await)
        }
    };
    match against_records(checked, rules, store).await {
        Ok(checked) => Ok(checked),
        Err(Intake::Refused(refusal)) => Err(refused(refusal).await),
        Err(fate) => Err(fate),
    }
}

/// The checks that ask the provider's directory: the payee ([`with_payee`]), then what a
/// refund's payment has refunded already (`crate::refunded`).
async fn with_payee_and_refunded(
    checked: CheckedIntent,
    rules: &IntakeRules,
) -> Result<Result<CheckedIntent, Refusal>, DirectoryUnreachable> {
    match with_payee(checked, rules).await? {
        Ok(checked) => crate::refunded::with_refunded(checked, rules).await,
        Err(refusal) => Ok(Err(refusal)),
    }
}

/// `otherwise`, unless the very snapshot of `intent` is stored already: then the intent
/// is a redelivery or a resend, a no-op as always.
async fn prepared_before_or<R: StoreIntents>(
    store: &StoreAs<R>,
    intent: &ValidIntent,
    otherwise: Intake,
) -> Intake {
    match store.prepared_before(intent).await {
        Ok(true) => Intake::AlreadyPrepared(intent.clone()),
        Ok(false) => otherwise,
        Err(e) => Intake::Unavailable(e),
    }
}

/// `refusal`, unless the very snapshot of `intent` is stored already: then the intent is a
/// redelivery or a resend, a no-op as always, whatever refuses it now.
pub async fn unless_prepared_before<R: StoreIntents>(
    store: &StoreAs<R>,
    intent: &ValidIntent,
    refusal: Refusal,
) -> Intake {
    let reason = refusal.reason;
    let fate = prepared_before_or(store, intent, Intake::Refused(refusal)).await;
    if matches!(fate, Intake::AlreadyPrepared(_)) {
        info!(operation_id = %intent.operation_id, reason, "same snapshot prepared before; the refusal does not apply to it");
        count("duplicate");
    }
    fate
}

/// The checks that read the fleet's own records, after [`with_payee`]: the provider objects
/// the intent names are its tenant's (`crate::objects`), then a payment's risk cues
/// (`crate::risk`). `Err` is the intent's fate: refused, or Postgres unavailable.
pub async fn against_records<R: StoreIntents>(
    checked: CheckedIntent,
    rules: &IntakeRules,
    store: &StoreAs<R>,
) -> Result<CheckedIntent, Intake> {
    let checked = match crate::objects::with_objects(checked, rules, store).await {
        Ok(Ok(checked)) => checked,
        Ok(Err(refusal)) => return Err(Intake::Refused(refusal)),
        Err(e) => return Err(Intake::Unavailable(e)),
    };
    crate::risk::with_risk(checked, rules, store)
        .await
        .map_err(Intake::Unavailable)
}

/// Looks up the payee of a validated intent and keeps what was found as its evidence. An
/// unknown payee (the directory said 404) is what the intent's policy says: refused
/// (`payee_unknown`), or needing more approvers. A directory that gave no answer is
/// `Err`: nothing is known, so nothing is refused.
pub async fn with_payee(
    checked: CheckedIntent,
    rules: &IntakeRules,
) -> Result<Result<CheckedIntent, Refusal>, DirectoryUnreachable> {
    let intent = &checked.intent;
    let payer = rules
        .payees
        .payer(
            intent.operation_id.as_str(),
            &intent.snapshot.tenant_id,
            intent.action,
            &intent.snapshot.payload,
        )
        .await?;
    match payer {
        Some(Ok(evidence)) => return Ok(judge_payee(checked, rules, evidence)),
        Some(Err(refusal)) => {
            let reason = refusal.refusal().as_str();
            warn!(operation_id = %intent.operation_id, action = intent.action.wire_name(), reason, "intent refused: who it charges is not as named");
            return Ok(Err(counted(Refusal::new(reason, Some(refusal.field())))));
        }
        None => {}
    }
    let evidence = rules
        .payees
        .evidence(
            intent.operation_id.as_str(),
            intent.action,
            &intent.snapshot.payload,
        )
        .await?;
    let Some(evidence) = evidence else {
        return Ok(Ok(checked));
    };
    Ok(judge_payee(checked, rules, evidence))
}

/// What the payee's evidence means for the intent under its policy.
fn judge_payee(
    mut checked: CheckedIntent,
    rules: &IntakeRules,
    evidence: PayeeEvidence,
) -> Result<CheckedIntent, Refusal> {
    let evidence = crate::payee::name_check::checked(&checked, evidence);
    let intent = &checked.intent;
    if evidence.found().is_none() {
        let rule = rules
            .policies
            .unknown_payee(&intent.snapshot.policy_version, intent.action)
            .map_err(|refusal| counted(Refusal::new(refusal.reason(), Some(refusal.field()))))?;
        match rule.approvers(checked.approvals_required) {
            Some(approvers) => checked.approvals_required = approvers,
            None => {
                warn!(operation_id = %intent.operation_id, action = intent.action.wire_name(), reason = PAYEE_UNKNOWN, "intent refused: its payee cannot be confirmed");
                let field = intent.action.spec().payee.map(|m| format!("payload.{m}"));
                return Err(counted(Refusal::new(PAYEE_UNKNOWN, field.as_deref())));
            }
        }
    }
    let checked = crate::payee::name_check::judge_name(checked, rules, &evidence)?;
    Ok(CheckedIntent {
        payee: Some(evidence),
        ..checked
    })
}

/// The refusal of an intent whose payee the provider's directory cannot confirm, under a
/// policy that refuses unknown payees.
pub const PAYEE_UNKNOWN: &str = IntakeRefusal::PayeeUnknown.as_str();

/// Parses and checks raw bytes: the contract, the capability guard, then the quorum
/// policy the intent names. A refusal is logged and counted here.
pub fn validate(bytes: &[u8], rules: &IntakeRules) -> Result<CheckedIntent, Refusal> {
    let intent = match parse_intent(bytes) {
        Ok(intent) => intent,
        Err(e) => return Err(counted(refusal_of(&e))),
    };
    if let Err(reason) = guard(
        intent.action,
        &intent.snapshot.provider,
        intent.approval_ttl_seconds,
        &rules.providers,
    ) {
        warn!(operation_id = %intent.operation_id, action = intent.action.wire_name(), provider = %intent.snapshot.provider, reason, "intent refused");
        return Err(counted(Refusal::new(reason, Some("provider"))));
    }
    let s = &intent.snapshot;
    let required = rules
        .policies
        .amount_requirement(&s.policy_version, intent.action, &s.payload);
    match required {
        Ok(required) => Ok(CheckedIntent {
            intent,
            approvals_required: required.approvers,
            signatures_required: required.signed,
            payee: None,
            risk: None,
            refunded: None,
            trace: None,
        }),
        Err(refusal) => {
            // The version is the agent's text, not a secret; the log names it so the
            // missing policy file (or band) can be found.
            warn!(operation_id = %intent.operation_id, action = intent.action.wire_name(), policy_version = %s.policy_version, reason = refusal.reason(), field = refusal.field(), "intent refused: its quorum policy cannot judge it");
            Err(counted(Refusal::new(
                refusal.reason(),
                Some(refusal.field()),
            )))
        }
    }
}

/// The refusal of an intent found wrong before its bytes were read (an intake that
/// assembles the intent itself, such as a tool's arguments), logged and counted as
/// [`validate`] logs and counts its own.
pub fn refuse(e: &IntentError) -> Refusal {
    counted(refusal_of(e))
}

/// What [`write`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    Inserted,
    /// The same snapshot was prepared before: nothing to do.
    AlreadyPrepared,
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The operation id names another snapshot; the stored one is untouched.
    #[error("operation_id_conflict")]
    Conflict,
    /// Refused for good (it may not replace the operation it supersedes, or Postgres
    /// cannot store its values); nothing was written.
    #[error("{}", .0.reason)]
    Refused(Refusal),
    /// Postgres failed; nothing was decided, so the caller may try again.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The payee's directory gave no answer; nothing was decided.
    #[error("payee_directory_unavailable")]
    DirectoryUnreachable,
}

/// Writes a validated intent on behalf of `submitted_by` (the authenticated principal, for
/// an intake that has one).
pub async fn write<R: StoreIntents>(
    store: &StoreAs<R>,
    checked: &CheckedIntent,
    submitted_by: Option<&str>,
) -> Result<Written, WriteError> {
    match store_intent_by(store, checked.clone(), submitted_by).await {
        Intake::Prepared(_) => Ok(Written::Inserted),
        Intake::AlreadyPrepared(_) => Ok(Written::AlreadyPrepared),
        Intake::Refused(r) if r.is(IntakeRefusal::OperationIdConflict) => Err(WriteError::Conflict),
        Intake::Refused(r) => Err(WriteError::Refused(r)),
        Intake::Unavailable(e) => Err(WriteError::Store(e)),
        // Writing looks nothing up; only `against_world` meets the directory.
        Intake::DirectoryUnreachable => Err(WriteError::DirectoryUnreachable),
    }
}

/// Writes an intent that passed validation, from the queue (no authenticated submitter).
pub async fn store_intent<R: StoreIntents>(store: &StoreAs<R>, checked: CheckedIntent) -> Intake {
    store_intent_by(store, checked, None).await
}

/// Writes an intent that passed validation, mapping every store answer to its meaning.
/// Postgres refusing the values (a gap in validation) is a refusal, never a retry.
pub async fn store_intent_by<R: StoreIntents>(
    store: &StoreAs<R>,
    checked: CheckedIntent,
    submitted_by: Option<&str>,
) -> Intake {
    let stored = store
        .insert_prepared(&checked.intent, checked.requirement(), submitted_by)
        .await;
    judged(checked, submitted_by, stored)
}

/// What the store's answer for `checked` means for its sender, logged and counted here.
pub fn judged(
    checked: CheckedIntent,
    submitted_by: Option<&str>,
    stored: Result<PrepareOutcome, StoreError>,
) -> Intake {
    let CheckedIntent {
        intent,
        approvals_required,
        signatures_required,
        payee,
        risk,
        ..
    } = checked;
    let risk_cues = risk.as_ref().map_or(0, Vec::len);
    let payee_version = payee.as_ref().and_then(PayeeEvidence::version);
    let op = &intent.operation_id;
    match stored {
        Ok(PrepareOutcome::Inserted) => {
            info!(operation_id = %op, action = intent.action.wire_name(), payload_hash = %intent.payload_hash, supersedes = intent.supersedes.as_ref().map(|o| o.as_str()), submitted_by, approvals_required, signatures_required, payee_version, risk_cues, "prepared, approval pending");
            count("prepared");
            if intent.supersedes.is_some() {
                metrics::counter!(m::APPROVALS_RENEWED_TOTAL, "action" => intent.action.wire_name()).increment(1);
            }
            Intake::Prepared(intent)
        }
        Ok(PrepareOutcome::AlreadyPrepared) => {
            info!(operation_id = %op, "same snapshot prepared before; nothing to do");
            count("duplicate");
            Intake::AlreadyPrepared(intent)
        }
        Ok(PrepareOutcome::Refused(reason)) => {
            warn!(operation_id = %op, supersedes = intent.supersedes.as_ref().map(|o| o.as_str()), reason, "intent refused: it cannot replace that operation");
            refused(Refusal::new(reason, Some("supersedes")))
        }
        Ok(PrepareOutcome::Conflict { stored_hash }) => {
            let refusal = IntakeRefusal::OperationIdConflict;
            warn!(operation_id = %op, payload_hash = %intent.payload_hash, stored_hash = %stored_hash, reason = refusal.as_str(), "intent refused: the id names another snapshot");
            refused(Refusal::of(refusal, Some("operation_id")))
        }
        Err(e) if e.refuses_content() => {
            // The SQLSTATE says which rule; the server's message is not logged, since it
            // can quote the offending value.
            let refusal = IntakeRefusal::DatabaseRefused;
            warn!(operation_id = %op, sqlstate = e.sqlstate().unwrap_or(""), reason = refusal.as_str(), "intent refused: Postgres cannot store its values");
            refused(Refusal::of(refusal, None))
        }
        Err(e) => {
            warn!(operation_id = %op, error = %e, "could not store the intent; it will be tried again");
            Intake::Unavailable(e)
        }
    }
}

fn refusal_of(e: &IntentError) -> Refusal {
    // The detail can quote payload values (serde names the value it choked on), so only
    // the code and the field name leave this function.
    let field = match e {
        IntentError::InvalidField { field, .. } => Some(field.as_str()),
        IntentError::Ambiguous { at, .. } => Some(at.as_str()),
        IntentError::Oversized(_)
        | IntentError::Malformed(_)
        | IntentError::UnsupportedSchema(_)
        | IntentError::UnknownAction { .. } => None,
    };
    let refusal = Refusal::new(e.code(), field);
    warn!(
        reason = refusal.reason,
        field = refusal.field.as_deref(),
        "intent refused"
    );
    refusal
}

fn refused(refusal: Refusal) -> Intake {
    Intake::Refused(counted(refusal))
}
