//! Objects belong to tenants. An intent may name an object at a provider (a refund's
//! payment, the deal an update changes, the order a status change moves): ids that are
//! free text to the agent, and that nothing at the provider ties to a tenant. The fleet's
//! own records do: a succeeded operation's `external_id` is the object it made or acted
//! on, and the operation is one tenant's. So an object the fleet recorded for another
//! tenant is never named by this one (`object_of_other_tenant`), and one the fleet has no
//! record of (made outside the fleet) is what the intent's policy says
//! (`crate::policy::UnconfirmedRule`: refused `object_unknown`, or more approvers).
//!
//! Pure: the records are read by the caller (`fleet_store`), judged here.

pub use crate::action_spec::object_ref::{ObjectField, ObjectRef};
use crate::refusal::IntakeRefusal;

/// The refusal of an intent naming an object the fleet recorded for another tenant.
pub const OBJECT_OF_OTHER_TENANT: &str = IntakeRefusal::ObjectOfOtherTenant.as_str();
/// The refusal of an intent naming an object the fleet has no record of, under a policy
/// that refuses such objects.
pub const OBJECT_UNKNOWN: &str = IntakeRefusal::ObjectUnknown.as_str();

/// Whose an object is, by the fleet's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    /// Recorded for this tenant only.
    Own,
    /// Recorded for some other tenant (whether or not also for this one: an object two
    /// tenants acted on is no one's to act on again).
    OtherTenant,
    /// The fleet has no record of it: it was made outside the fleet.
    Unrecorded,
}

/// Whose an object is for `tenant`, given the tenants of the succeeded operations that
/// recorded it.
pub fn ownership<S: AsRef<str>>(tenant: &str, recorded_for: &[S]) -> Ownership {
    if recorded_for.iter().any(|t| t.as_ref() != tenant) {
        Ownership::OtherTenant
    } else if recorded_for.is_empty() {
        Ownership::Unrecorded
    } else {
        Ownership::Own
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action_spec::Action;
    use serde_json::json;

    #[test]
    fn an_object_is_the_tenants_only_when_every_record_is_its_own() {
        assert_eq!(ownership::<&str>("t_a", &[]), Ownership::Unrecorded);
        assert_eq!(ownership("t_a", &["t_a", "t_a"]), Ownership::Own);
        assert_eq!(ownership("t_a", &["t_b"]), Ownership::OtherTenant);
        assert_eq!(ownership("t_a", &["t_a", "t_b"]), Ownership::OtherTenant);
    }

    #[test]
    fn a_reference_reads_its_field() {
        let payment = ObjectRef {
            kind: "payment",
            field: ObjectField::Payload("payment_id"),
            recorded_by: &[Action::PaymentCreate],
        };
        let payload = json!({"payment_id": "pay_1"});
        assert_eq!(payment.id(Some("x"), &payload), Some("pay_1"));
        assert_eq!(payment.field_name(), "payload.payment_id");
        assert_eq!(payment.recorded_by_names(), ["payment.create"]);
        let deal = ObjectRef {
            kind: "deal",
            field: ObjectField::Target,
            recorded_by: &[Action::CrmDealCreate],
        };
        assert_eq!(deal.id(Some("deal_1"), &payload), Some("deal_1"));
        assert_eq!(deal.id(None, &payload), None);
        assert_eq!(deal.field_name(), "target");
    }

    #[test]
    fn every_catalogued_reference_is_recorded_by_actions_of_its_provider() {
        for spec in crate::CATALOGUE {
            for object in spec.objects {
                assert!(!object.recorded_by.is_empty(), "{}", spec.wire_name);
                for by in object.recorded_by {
                    assert_eq!(by.spec().provider, spec.provider, "{}", spec.wire_name);
                }
            }
        }
    }
}
