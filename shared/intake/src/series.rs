//! The series of the intake, created at zero when the process starts (fleet-prepare, and
//! the HTTP API, which takes intents through the same intake), so that dashboards and
//! alerts see every outcome from the first scrape rather than from its first occurrence.

use fleet_core::Action;
use fleet_runtime::metric_names as m;

/// Every reason an intent is refused with: its `fleet_intents_prepared_total` outcome
/// and, from the queue, its dead-letter reason. Core names them all
/// ([`fleet_core::IntakeRefusal`]); the tests below hold every refusing module's codes
/// and the contract's fixtures to that list.
pub const REFUSAL_REASONS: &[&str] = fleet_core::IntakeRefusal::NAMES;

/// `fleet_intents_prepared_total` by outcome and `fleet_approvals_renewed_total` by
/// action, at zero.
pub fn intake_series_at_zero() {
    for outcome in ["prepared", "duplicate"].iter().chain(REFUSAL_REASONS) {
        metrics::counter!(m::INTENTS_PREPARED_TOTAL, "outcome" => *outcome).increment(0);
    }
    for action in Action::ALL {
        metrics::counter!(m::APPROVALS_RENEWED_TOTAL, "action" => action.wire_name()).increment(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared intent fixtures are named `<reason>--<case>.json` for every refusal the
    /// contract knows.
    #[test]
    fn every_refusal_of_the_contract_fixtures_is_listed() {
        let root = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../core/tests/fixtures/intents"
        );
        let mut seen = 0;
        for dir in ["invalid", "strict"] {
            for entry in std::fs::read_dir(format!("{root}/{dir}")).unwrap() {
                let name = entry.unwrap().file_name().into_string().unwrap();
                let reason = name.split("--").next().unwrap();
                assert!(
                    REFUSAL_REASONS.contains(&reason),
                    "{reason} (from {name}) is not listed"
                );
                seen += 1;
            }
        }
        assert!(seen > 100, "fixtures found: {seen}");
    }

    #[test]
    fn every_refusal_of_a_superseding_intent_is_listed() {
        for reason in fleet_core::supersede::REFUSALS {
            assert!(REFUSAL_REASONS.contains(&reason), "{reason}");
        }
    }

    #[test]
    fn every_refusal_of_the_capability_guard_is_listed() {
        for reason in fleet_core::catalogue::capabilities::REFUSALS {
            assert!(REFUSAL_REASONS.contains(&reason), "{reason}");
        }
    }

    #[test]
    fn every_refusal_of_the_policies_the_payee_and_the_objects_is_listed() {
        for reason in [
            fleet_core::policy::PolicyRefusal::UnknownPolicy.reason(),
            fleet_core::policy::PolicyRefusal::ActionNotInPolicy.reason(),
            fleet_core::policy::PolicyRefusal::NotInForce.reason(),
            fleet_core::policy::PolicyRefusal::CurrencyNotBanded.reason(),
            crate::intake::PAYEE_UNKNOWN,
            fleet_core::objects::OBJECT_OF_OTHER_TENANT,
            fleet_core::objects::OBJECT_UNKNOWN,
        ] {
            assert!(REFUSAL_REASONS.contains(&reason), "{reason}");
        }
    }
}
