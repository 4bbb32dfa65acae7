//! Why a verified provider event body cannot be used, whichever provider sent it and in
//! whichever format: the same three failures, dead-lettered under the same reasons (the
//! signed bytes stay in the dead-letter queue for an operator).

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    #[error("the body is not a JSON object")]
    NotAnObject,
    #[error("the event has no {0}")]
    Missing(&'static str),
    #[error("the event's {0} has the wrong type or size")]
    Invalid(&'static str),
}

impl EventError {
    /// The dead-letter reason.
    pub fn reason(self) -> &'static str {
        match self {
            EventError::NotAnObject => "malformed_event",
            EventError::Missing(_) => "missing_field",
            EventError::Invalid(_) => "invalid_field",
        }
    }
}
