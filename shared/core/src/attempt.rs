//! What one provider call proved, as recorded in `attempts.outcome`: the label of the
//! call's [`Outcome`](crate::Outcome), kept with the attempt so reconcile and the operators
//! read it later without the answer itself.

use crate::by_name::{display_by_name, serialize_by_name};

/// The names the `attempts_outcome_check` constraint admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttemptOutcome {
    /// The effect exists and is final.
    Succeeded,
    /// The provider definitively refused.
    Failed,
    /// The provider took the request and settles it later.
    Accepted,
    /// A conditional update found another version.
    VersionConflict,
    /// A transition found the object in another status.
    StatusConflict,
    /// Provably nothing was sent (or nothing may be sent): no effect.
    NotExecuted,
    /// The effect may or may not exist.
    Unknown,
}

impl AttemptOutcome {
    pub const ALL: [AttemptOutcome; 7] = [
        AttemptOutcome::Succeeded,
        AttemptOutcome::Failed,
        AttemptOutcome::Accepted,
        AttemptOutcome::VersionConflict,
        AttemptOutcome::StatusConflict,
        AttemptOutcome::NotExecuted,
        AttemptOutcome::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AttemptOutcome::Succeeded => "succeeded",
            AttemptOutcome::Failed => "failed",
            AttemptOutcome::Accepted => "accepted",
            AttemptOutcome::VersionConflict => "version_conflict",
            AttemptOutcome::StatusConflict => "status_conflict",
            AttemptOutcome::NotExecuted => "not_executed",
            AttemptOutcome::Unknown => "unknown",
        }
    }

    pub fn parse(s: &str) -> Option<AttemptOutcome> {
        AttemptOutcome::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

display_by_name!(AttemptOutcome);

serialize_by_name!(AttemptOutcome);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_serialise_as_the_column_holds_them() {
        for o in AttemptOutcome::ALL {
            assert_eq!(AttemptOutcome::parse(o.as_str()), Some(o));
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
        }
        assert_eq!(AttemptOutcome::parse("conflict"), None);
    }
}
