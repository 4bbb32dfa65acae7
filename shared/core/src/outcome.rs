//! Outcome classification: what one provider call proves about the side effect.
//!
//! The adapter reports what the transport saw (`CallResult`); the action's classifier
//! (`crate::actions`, from the shared pieces here) decides what that means. The rule that matters: anything that could have reached the
//! provider and did not come back definitive is `Unknown`, never a failure and never a
//! reason to call again.

use serde_json::Value;

use crate::attempt::AttemptOutcome;
use crate::lookup::Found;
use crate::reason::Reason;

/// What the transport saw of one provider call.
#[derive(Debug, Clone, PartialEq)]
pub enum CallResult {
    /// The request provably never left this host (connection refused, DNS failure):
    /// the provider cannot have acted on it.
    NotSent { detail: String },
    /// The request may have been sent but no complete answer came back.
    NoAnswer { kind: NoAnswerKind },
    /// A complete HTTP answer.
    Answer(ProviderAnswer),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoAnswerKind {
    Timeout,
    Reset,
}

impl NoAnswerKind {
    /// The reason of the unknown outcome it leaves.
    pub fn reason(self) -> Reason {
        match self {
            NoAnswerKind::Timeout => Reason::Timeout,
            NoAnswerKind::Reset => Reason::ConnectionReset,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.reason().as_str()
    }
}

/// A complete answer from the provider, reduced to what classification and the
/// attempts log need. `body` is the parsed JSON (or `Null` when it was not JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderAnswer {
    pub status: u16,
    /// `Idempotent-Replayed: true`: the provider returned the answer it saved for this key.
    pub replayed: bool,
    pub request_id: Option<String>,
    /// What a `Retry-After` header asked for, read and bounded by
    /// `throttle::retry_after` (only a 429 is ever waited on for it).
    pub retry_after: Option<std::time::Duration>,
    /// What the provider said of sending the same request again (Stripe's
    /// `Stripe-Should-Retry: true` / `false`); `None`: it said nothing.
    pub should_retry: Option<bool>,
    pub body: Value,
}

/// What a call proves about the effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The effect exists and is final.
    Succeeded { external_id: String },
    /// The provider definitively refused; no effect exists.
    Failed { code: String },
    /// The provider accepted and will settle later (webhook or lookup). A CRM that queues
    /// a create gives no id yet: the lookup finds it by our external id.
    Accepted { external_id: Option<String> },
    /// A conditional update found its precondition broken (another version, another
    /// status): the approved change no longer applies. Never retried with fresh data; a
    /// person must approve a new intent. `current` is what the provider holds now.
    Conflict {
        on: Precondition,
        current: Option<String>,
    },
    /// Provably no effect and nothing saved under the key: the same key may be sent again.
    NotExecuted { reason: Reason },
    /// The effect may or may not exist; only a lookup (or a person) may settle it.
    /// `escalate` marks answers that are an alarm for an operator at once.
    Unknown { reason: Reason, escalate: bool },
}

/// What a conditional update was conditional on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    /// The object's version (`If-Match`).
    Version,
    /// The object's status (a transition's `from`).
    Status,
    /// The payee's version the approver was shown (a payment's `beneficiary_version`):
    /// the payee's name, country or account changed since.
    Payee,
}

impl Precondition {
    /// The outcome label, the attempt's outcome and the cancelled row's reason.
    pub fn code(self) -> &'static str {
        match self {
            Precondition::Version => "version_conflict",
            Precondition::Status => "status_conflict",
            Precondition::Payee => "beneficiary_changed",
        }
    }

    /// The reason of the cancelled row: named as [`Precondition::code`].
    pub fn reason(self) -> Reason {
        match self {
            Precondition::Version => Reason::VersionConflict,
            Precondition::Status => Reason::StatusConflict,
            Precondition::Payee => Reason::BeneficiaryChanged,
        }
    }

    /// The attempt's outcome: named as [`Precondition::code`].
    pub fn attempt_outcome(self) -> AttemptOutcome {
        match self {
            // The payee's version is a version like an object's: the attempt found another.
            Precondition::Version | Precondition::Payee => AttemptOutcome::VersionConflict,
            Precondition::Status => AttemptOutcome::StatusConflict,
        }
    }
}

impl Outcome {
    /// Every value [`Outcome::label`] gives, so the series can exist before the first call.
    pub const LABELS: [&'static str; 7] = [
        "succeeded",
        "failed",
        "accepted",
        "version_conflict",
        "status_conflict",
        "not_executed",
        "unknown",
    ];

    /// A short, bounded label for metrics (one of [`Outcome::LABELS`]): the attempt's
    /// outcome.
    pub fn label(&self) -> &'static str {
        self.attempt_outcome().as_str()
    }

    /// What the attempt that got this answer records.
    pub fn attempt_outcome(&self) -> AttemptOutcome {
        match self {
            Outcome::Succeeded { .. } => AttemptOutcome::Succeeded,
            Outcome::Failed { .. } => AttemptOutcome::Failed,
            Outcome::Accepted { .. } => AttemptOutcome::Accepted,
            Outcome::Conflict { on, .. } => on.attempt_outcome(),
            Outcome::NotExecuted { .. } => AttemptOutcome::NotExecuted,
            Outcome::Unknown { .. } => AttemptOutcome::Unknown,
        }
    }
}

pub(crate) fn error_code(body: &Value) -> Option<&str> {
    body.pointer("/error/code").and_then(Value::as_str)
}

pub(crate) fn error_type(body: &Value) -> Option<&str> {
    body.pointer("/error/type").and_then(Value::as_str)
}

pub(crate) fn unknown(reason: Reason) -> Outcome {
    Outcome::Unknown {
        reason,
        escalate: false,
    }
}

/// Classifies one create sent under an idempotency key the provider honours with
/// Stripe's semantics (the payments API, the e-signature API): the created object, read
/// by `created`, or what the key's bookkeeping says.
pub fn classify_keyed_create(call: &CallResult, created: fn(&Value) -> Option<Found>) -> Outcome {
    let answer = match transport(call) {
        Ok(answer) => answer,
        Err(outcome) => return outcome,
    };
    let body = &answer.body;
    match answer.status {
        // A 2xx we cannot read proves the provider acted but not how: ask it.
        200 | 201 => {
            created(body).map_or_else(|| unknown(Reason::UnreadableSuccessBody), Outcome::from)
        }
        402 => Outcome::Failed {
            code: error_code(body).unwrap_or("payment_rejected").to_owned(),
        },
        400 if error_type(body) == Some("idempotency_error") => {
            // Same key, different parameters: the snapshot drifted between attempts.
            Outcome::Unknown {
                reason: Reason::IdempotencyKeyReused,
                escalate: true,
            }
        }
        400 => Outcome::Failed {
            code: error_code(body).unwrap_or("invalid_request").to_owned(),
        },
        // The payee changed after the approval: refused before execution, nothing saved
        // under the key. A new decision for people, never a retry.
        409 if error_type(body) == Some("precondition_failed")
            && error_code(body) == Some("beneficiary_changed") =>
        {
            Outcome::Conflict {
                on: Precondition::Payee,
                current: body
                    .pointer("/error/current_version")
                    .and_then(Value::as_i64)
                    .map(|v| v.to_string()),
            }
        }
        409 => unknown(Reason::IdempotencyKeyInUse),
        // Rejected before execution and never saved under the key: provably no effect.
        401 | 403 | 429 => Outcome::NotExecuted {
            reason: Reason::Http(answer.status),
        },
        s if s >= 500 && answer.replayed => unknown(Reason::HttpReplayed(s)),
        s => unknown(Reason::Http(s)),
    }
}

/// What a provider object found in an answer proves: its final status, or accepted while
/// the provider is still working on it.
impl From<Found> for Outcome {
    fn from(found: Found) -> Outcome {
        match found {
            Found::Succeeded { external_id } => Outcome::Succeeded { external_id },
            Found::Pending { external_id } => Outcome::Accepted {
                external_id: Some(external_id),
            },
            Found::Failed { code, .. } => Outcome::Failed { code },
        }
    }
}

/// Transport-level results shared by every classifier: only a complete answer is read.
pub(crate) fn transport(call: &CallResult) -> Result<&ProviderAnswer, Outcome> {
    match call {
        CallResult::NotSent { .. } => Err(Outcome::NotExecuted {
            reason: Reason::NotSent,
        }),
        CallResult::NoAnswer { kind } => Err(unknown(kind.reason())),
        CallResult::Answer(answer) => Ok(answer),
    }
}

/// Answers that mean the same for every call to a provider without idempotency keys
/// (nothing is saved for a replay): refused in front of the provider, a client error
/// (definitive), anything else unknown.
pub(crate) fn classify_unkeyed_common(answer: &ProviderAnswer) -> Outcome {
    match answer.status {
        401 | 403 | 429 => Outcome::NotExecuted {
            reason: Reason::Http(answer.status),
        },
        s @ 400..=499 => Outcome::Failed {
            code: error_code(&answer.body)
                .map(str::to_owned)
                .unwrap_or_else(|| format!("http_{s}")),
        },
        s => unknown(Reason::Http(s)),
    }
}

/// The reason of a payment refused for a changed payee after an earlier attempt whose fate
/// is unknown: that attempt may have paid (the lookup decides), and if it did not, only a
/// person may decide again (reconcile never sends it back, see `reconcile::settle`).
pub const PAYEE_CHANGED_AFTER_UNCERTAIN: Reason = Reason::BeneficiaryChangedAfterUncertainAttempt;

/// A conditional update refused (412) after an earlier attempt whose fate is unknown may
/// have been refused by our own earlier request, committed late: it is a conflict only once
/// a lookup shows the deal does not hold the approved change. `earlier_outcomes` are the
/// recorded outcomes of the operation's earlier attempts (`None`: never finished).
pub fn settle_conflict(conflict: Outcome, earlier_outcomes: &[Option<AttemptOutcome>]) -> Outcome {
    let uncertain_before = earlier_outcomes.iter().any(|o| {
        matches!(
            o,
            None | Some(AttemptOutcome::Unknown) | Some(AttemptOutcome::Accepted)
        )
    });
    match conflict {
        Outcome::Conflict {
            on: Precondition::Payee,
            ..
        } if uncertain_before => unknown(PAYEE_CHANGED_AFTER_UNCERTAIN),
        Outcome::Conflict { .. } if uncertain_before => {
            unknown(Reason::ConflictAfterUncertainAttempt)
        }
        other => other,
    }
}

/// A complete answer, as the classifiers' tests hand one over.
#[cfg(test)]
pub(crate) fn answer(status: u16, replayed: bool, body: Value) -> CallResult {
    CallResult::Answer(ProviderAnswer {
        status,
        replayed,
        request_id: None,
        retry_after: None,
        should_retry: None,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_label_is_an_attempt_outcome() {
        assert_eq!(
            Outcome::LABELS,
            AttemptOutcome::ALL.map(AttemptOutcome::as_str)
        );
        for on in [Precondition::Version, Precondition::Status] {
            assert_eq!(on.attempt_outcome().as_str(), on.code());
        }
        for on in [
            Precondition::Version,
            Precondition::Status,
            Precondition::Payee,
        ] {
            assert_eq!(on.reason().as_str(), on.code());
        }
    }

    #[test]
    fn a_conflict_after_an_uncertain_attempt_is_looked_up_not_cancelled() {
        let conflict = Outcome::Conflict {
            on: Precondition::Version,
            current: Some("8".into()),
        };
        assert_eq!(settle_conflict(conflict.clone(), &[]), conflict);
        assert_eq!(
            settle_conflict(conflict.clone(), &[Some(AttemptOutcome::NotExecuted)]),
            conflict
        );
        assert_eq!(
            settle_conflict(conflict.clone(), &[Some(AttemptOutcome::Unknown)]),
            unknown(Reason::ConflictAfterUncertainAttempt)
        );
        assert_eq!(
            settle_conflict(conflict.clone(), &[Some(AttemptOutcome::NotExecuted), None]),
            unknown(Reason::ConflictAfterUncertainAttempt)
        );
        let paid = Outcome::Succeeded {
            external_id: "deal_1".into(),
        };
        assert_eq!(
            settle_conflict(paid.clone(), &[Some(AttemptOutcome::Unknown)]),
            paid
        );
    }
}
