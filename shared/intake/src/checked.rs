//! What the intake passes from check to check and answers with: the rules an intent is
//! checked against, the intent once checked, its fate, and a refusal as its sender is told
//! it. Every refusal is counted here, once (`fleet_intents_prepared_total` by outcome).

use std::sync::Arc;

use fleet_core::catalogue::ProviderCapabilities;
use fleet_core::payee::PayeeEvidence;
use fleet_core::risk::RiskCue;
use fleet_core::trace_context::TraceParent;
use fleet_core::{IntakeRefusal, PolicySet, ValidIntent};
use fleet_runtime::metric_names as m;
use fleet_store::{Requirement, StoreError};

use crate::payee::PayeeDirectory;

/// What an intent is checked against besides the contract: what the providers guarantee
/// (the capability guard), the quorum policies in force, and the providers' directories of
/// payees.
#[derive(Debug, Clone)]
pub struct IntakeRules {
    pub providers: ProviderCapabilities,
    pub policies: Arc<PolicySet>,
    pub payees: PayeeDirectory,
}

/// An intent that passed every check, with the number of distinct approvers its policy
/// requires for it.
#[derive(Debug, Clone)]
pub struct CheckedIntent {
    pub intent: ValidIntent,
    pub approvals_required: u8,
    /// How many of those approvals must be signed by their approvers (0: none).
    pub signatures_required: u8,
    /// Who the effect goes to, as the provider's directory described it at intake.
    pub payee: Option<PayeeEvidence>,
    /// A payment's risk cues (`crate::risk`); `None` for what is no payment.
    pub risk: Option<Vec<RiskCue>>,
    /// A refund's payment as the provider described it at intake (`crate::refunded`),
    /// kept in the history's `prepared` event.
    pub refunded: Option<serde_json::Value>,
    /// The trace the door continued or started for it, stored with the operation so that
    /// every later component continues it (`fleet_core::trace_context`).
    pub trace: Option<TraceParent>,
}

impl CheckedIntent {
    /// What the operation needs before it may run, as the store records it.
    pub fn requirement(&self) -> Requirement {
        Requirement {
            approvals_required: i16::from(self.approvals_required),
            signatures_required: i16::from(self.signatures_required),
            payee: self.payee.as_ref().map(PayeeEvidence::to_json),
            risk: self
                .risk
                .as_ref()
                .and_then(|cues| serde_json::to_value(cues).ok()),
            evidence: self
                .refunded
                .as_ref()
                .map(|r| serde_json::json!({ "refunded": r })),
            trace_parent: self.trace.map(|t| t.to_string()),
        }
    }

    /// The same intent, under the trace its door continued or started.
    pub fn traced(self, trace: TraceParent) -> CheckedIntent {
        CheckedIntent {
            trace: Some(trace),
            ..self
        }
    }
}

/// The fate of one intent.
#[derive(Debug)]
pub enum Intake {
    /// Stored now, approval pending.
    Prepared(ValidIntent),
    /// The same snapshot was stored before (a redelivery or a resend): nothing to do.
    AlreadyPrepared(ValidIntent),
    /// Refused for good: the same message is refused every time. Nothing was written.
    Refused(Refusal),
    /// Postgres failed in a way that says nothing about the intent (down, overloaded,
    /// a lock or serialisation conflict): the same message may succeed later.
    Unavailable(StoreError),
    /// The provider's directory gave no answer about the intent's payee (429, 5xx, a
    /// timeout): nothing was written, and the same message may succeed later.
    DirectoryUnreachable,
}

/// Why an intent was refused, as a sender can be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// A bounded code: the dead-letter reason (see docs/protocol.md).
    pub reason: &'static str,
    /// The member the refusal is about (`payload.amount_minor`), when there is one.
    pub field: Option<String>,
}

impl Refusal {
    /// A refusal with the code of a refusing module (`IntentError::code`, the capability
    /// guard's, …): each is one of [`IntakeRefusal`]'s names.
    pub fn new(reason: &'static str, field: Option<&str>) -> Self {
        Refusal {
            reason,
            field: field.map(str::to_owned),
        }
    }

    /// A refusal the intake names itself.
    pub fn of(reason: IntakeRefusal, field: Option<&str>) -> Self {
        Refusal::new(reason.as_str(), field)
    }

    /// Whether this is the refusal `reason`.
    pub fn is(&self, reason: IntakeRefusal) -> bool {
        self.reason == reason.as_str()
    }
}

pub fn counted(refusal: Refusal) -> Refusal {
    count(refusal.reason);
    refusal
}

pub(crate) fn count(outcome: &'static str) {
    metrics::counter!(m::INTENTS_PREPARED_TOTAL, "outcome" => outcome).increment(1);
}
