//! Why an intent was refused: the one refusal of intent.v1's reading and of every
//! action's own checks.

use crate::intent_limits::MAX_INTENT_BYTES;
use crate::refusal::IntakeRefusal;
use crate::strict_json::Ambiguity;

/// Why an intent was refused. `code()` is the bounded dead-letter reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntentError {
    #[error("message is {0} bytes, more than the {MAX_INTENT_BYTES}-byte limit")]
    Oversized(usize),
    #[error("message is not a UTF-8 JSON object: {0}")]
    Malformed(String),
    /// JSON that parsers may read differently (duplicate names, lone surrogates, numbers
    /// no double holds) or that cannot be stored (U+0000). `at` is a member path.
    #[error("{at}: {}", kind.problem())]
    Ambiguous { kind: Ambiguity, at: String },
    #[error("schema {0:?} is not supported (expected \"intent.v1\")")]
    UnsupportedSchema(String),
    /// `known` lists the catalogue's wire names, for a refusal that names what is known
    /// (the catalogue's entries check payloads with this type, so it cannot read them).
    #[error("action {action:?} is not one of {known}")]
    UnknownAction { action: String, known: String },
    #[error("field {field}: {problem}")]
    InvalidField { field: String, problem: String },
}

impl IntentError {
    pub fn code(&self) -> &'static str {
        match self {
            IntentError::Oversized(_) => IntakeRefusal::Oversized.as_str(),
            IntentError::Malformed(_) => IntakeRefusal::Malformed.as_str(),
            IntentError::Ambiguous { kind, .. } => kind.code(),
            IntentError::UnsupportedSchema(_) => IntakeRefusal::UnsupportedSchema.as_str(),
            IntentError::UnknownAction { .. } => IntakeRefusal::UnknownAction.as_str(),
            IntentError::InvalidField { .. } => IntakeRefusal::InvalidField.as_str(),
        }
    }

    pub(crate) fn field(field: &str, problem: impl Into<String>) -> Self {
        IntentError::InvalidField {
            field: field.to_owned(),
            problem: problem.into(),
        }
    }
}
