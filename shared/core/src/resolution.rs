//! An operator's resolution of an operation the workers could not settle: the outcome
//! they established from the provider's records, and what that outcome requires.

use crate::by_name::display_by_name;
use crate::state::{Event, Status};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resolution {
    Succeeded,
    Failed,
    Cancelled,
}

impl Resolution {
    pub const ALL: [Resolution; 3] = [
        Resolution::Succeeded,
        Resolution::Failed,
        Resolution::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Resolution::Succeeded => "succeeded",
            Resolution::Failed => "failed",
            Resolution::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Resolution> {
        Resolution::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// The state machine's event for this decision.
    pub fn event(self) -> Event {
        match self {
            Resolution::Succeeded => Event::OperatorSucceeded,
            Resolution::Failed => Event::OperatorFailed,
            Resolution::Cancelled => Event::OperatorCancelled,
        }
    }

    /// The status the decision settles the operation in (its name is the resolution's).
    pub fn status(self) -> Status {
        match self {
            Resolution::Succeeded => Status::Succeeded,
            Resolution::Failed => Status::Failed,
            Resolution::Cancelled => Status::Cancelled,
        }
    }

    /// A success must name the provider's object (given now, or recorded before), so the
    /// effect can be found again; failures and cancellations have none.
    pub fn needs_external_id(self, given: bool, recorded: bool) -> bool {
        match self {
            Resolution::Succeeded => !given && !recorded,
            Resolution::Failed | Resolution::Cancelled => false,
        }
    }
}

display_by_name!(Resolution);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::transition;

    #[test]
    fn resolutions_round_trip_map_to_operator_events_and_only_success_needs_an_id() {
        for r in Resolution::ALL {
            assert_eq!(Resolution::parse(r.as_str()), Some(r));
            assert!(r.event().is_operator_decision());
            assert_eq!(r.status().as_str(), r.as_str());
            // The state machine takes the decision where it says.
            assert_eq!(transition(Status::Unknown, r.event()), Ok(r.status()));
            assert!(!r.needs_external_id(true, false) && !r.needs_external_id(false, true));
            assert_eq!(
                r.needs_external_id(false, false),
                r == Resolution::Succeeded
            );
        }
        assert_eq!(Resolution::parse("done"), None);
    }
}
