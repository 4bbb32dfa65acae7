//! What one attempt's answer becomes in the records: the attempt row
//! (`fleet_core::AttemptRecord::of`: what the provider said, its allow-listed summary
//! only) and the fenced transition out of `in_progress` that
//! `fleet_core::execute::answer_move` chooses. Built by the attempt (`perform`,
//! `call`) and written in batches (`batches`); kept apart from both so that neither
//! reaches into the other.

use fleet_core::confirmation::Confirmation;
use fleet_core::execute::answer_move;
use fleet_core::{OpKey, Outcome, Status};
use fleet_store::{AttemptRecord, Transition};

/// What the provider said for the claim (operation, fence), owned so that it can wait in
/// a batch.
pub(crate) struct Answer {
    pub op: OpKey,
    pub fence: i64,
    pub outcome: Outcome,
    pub attempt: AttemptRecord,
    /// What the history row of the move keeps besides the attempt (the payee as it is
    /// now, after the provider refused a changed one).
    pub evidence: Option<serde_json::Value>,
}

/// The fenced transition that records `answer`: from `in_progress` at the claim's fence,
/// as `fleet_core::execute::answer_move` says.
pub(crate) fn transition_of(answer: &Answer, accepted_deadline_s: u32) -> Transition<'_> {
    let step = answer_move(&answer.outcome, accepted_deadline_s);
    let attempt = &answer.attempt;
    Transition {
        reason: step.reason,
        error_code: step.error_code,
        external_id: step.external_id,
        deadline_s: step.deadline_s.map(f64::from),
        escalate: step.escalate,
        provider_request_id: attempt
            .provider_request_id
            .as_deref()
            .filter(|_| step.keeps_request_id),
        result: if step.keeps_result {
            attempt.response.clone()
        } else {
            None
        },
        evidence: answer.evidence.clone(),
        // The provider's answer to this attempt is the receipt of a success.
        confirmation: step.external_id.map(|object_id| Confirmation::Answer {
            object_id: object_id.to_owned(),
            fence: answer.fence,
            provider_request_id: attempt.provider_request_id.clone(),
        }),
        ..Transition::new(
            answer.op.op(),
            Status::InProgress,
            answer.fence,
            step.event,
            "execute",
        )
    }
}
