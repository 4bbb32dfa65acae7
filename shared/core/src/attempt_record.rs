//! What one provider call leaves in `attempts`: its outcome's label, what the provider
//! answered (status, replay flag, request id, the allow-listed summary of its body, never
//! the whole body nor the request sent), the id of the object it made, and a short detail
//! (the failure code, why nothing was sent or why it is uncertain). Pure: the store writes
//! it, execute builds it from the call and its classified outcome.

mod detail;

use serde_json::Value;

pub use detail::AttemptDetail;

use crate::answer::answer_summary;
use crate::attempt::AttemptOutcome;
use crate::outcome::{CallResult, Outcome};

#[derive(Debug, Clone, PartialEq)]
pub struct AttemptRecord {
    pub outcome: AttemptOutcome,
    pub http_status: Option<i32>,
    pub replayed: Option<bool>,
    pub external_id: Option<String>,
    pub provider_request_id: Option<String>,
    pub response: Option<Value>,
    pub detail: Option<String>,
}

impl AttemptRecord {
    /// An attempt that recorded only its outcome; the rest is added with struct-update
    /// syntax.
    pub fn new(outcome: AttemptOutcome) -> AttemptRecord {
        AttemptRecord {
            outcome,
            http_status: None,
            replayed: None,
            external_id: None,
            provider_request_id: None,
            response: None,
            detail: None,
        }
    }

    /// An attempt recorded as `outcome`, with `detail` (in its column's text form).
    pub fn with_detail(outcome: AttemptOutcome, detail: &AttemptDetail) -> AttemptRecord {
        AttemptRecord {
            detail: Some(detail.to_text()),
            ..AttemptRecord::new(outcome)
        }
    }

    /// The record of `call`, classified as `outcome`.
    pub fn of(call: &CallResult, outcome: &Outcome) -> AttemptRecord {
        let external_id = match outcome {
            Outcome::Succeeded { external_id } => Some(external_id.clone()),
            Outcome::Accepted { external_id } => external_id.clone(),
            Outcome::Failed { .. }
            | Outcome::NotExecuted { .. }
            | Outcome::Unknown { .. }
            | Outcome::Conflict { .. } => None,
        };
        let detail = match outcome {
            Outcome::Failed { code } => Some(AttemptDetail::Refused { code: code.clone() }),
            Outcome::NotExecuted { reason } | Outcome::Unknown { reason, .. } => {
                Some(AttemptDetail::Because { reason: *reason })
            }
            Outcome::Conflict { on, current } => Some(AttemptDetail::Conflict {
                on: *on,
                current: current.clone(),
            }),
            Outcome::Succeeded { .. } | Outcome::Accepted { .. } => None,
        };
        let base = AttemptRecord {
            external_id,
            detail: detail.as_ref().map(AttemptDetail::to_text),
            ..AttemptRecord::new(outcome.attempt_outcome())
        };
        match call {
            CallResult::Answer(a) => AttemptRecord {
                http_status: Some(i32::from(a.status)),
                replayed: Some(a.replayed),
                provider_request_id: a.request_id.clone(),
                // Only the allow-listed summary is stored, never the whole body (customer data).
                response: answer_summary(&a.body),
                ..base
            },
            CallResult::NotSent { .. } | CallResult::NoAnswer { .. } => base,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::ProviderAnswer;
    use crate::Reason;
    use serde_json::json;

    #[test]
    fn an_answer_keeps_its_status_ids_and_summary_only() {
        let call = CallResult::Answer(ProviderAnswer {
            status: 201,
            replayed: true,
            request_id: Some("req_1".into()),
            retry_after: None,
            should_retry: None,
            body: json!({"id": "pay_1", "status": "succeeded", "description": "for Ms. Ivanova"}),
        });
        let outcome = Outcome::Succeeded {
            external_id: "pay_1".into(),
        };
        let record = AttemptRecord::of(&call, &outcome);
        assert_eq!(record.outcome, AttemptOutcome::Succeeded);
        assert_eq!(record.http_status, Some(201));
        assert_eq!(record.replayed, Some(true));
        assert_eq!(record.provider_request_id.as_deref(), Some("req_1"));
        assert_eq!(record.external_id.as_deref(), Some("pay_1"));
        assert_eq!(record.detail, None);
        let kept = record.response.expect("a summary").to_string();
        assert!(!kept.contains("Ivanova"), "{kept}");
    }

    #[test]
    fn an_uncertain_call_keeps_why() {
        let outcome = Outcome::NotExecuted {
            reason: Reason::Http(429),
        };
        let call = CallResult::NotSent {
            detail: "connect".into(),
        };
        let record = AttemptRecord::of(&call, &outcome);
        assert_eq!(record.outcome, AttemptOutcome::NotExecuted);
        assert_eq!(record.detail.as_deref(), Some("http_429"));
        assert_eq!(record.http_status, None);
    }
}
