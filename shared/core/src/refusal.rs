//! Why the intake refuses an intent: the code a sender is told (a 422's `code` over the
//! API and MCP, the dead-letter reason on the queue) and the outcome label of
//! `fleet_intents_prepared_total`. Each is named once here; the modules that refuse
//! (the contract's validation, the capability guard, the policies, the payee's
//! directory, the tenant's records, a superseding intent, the store) take their codes
//! from [`IntakeRefusal::as_str`], so renaming one is a compile error where it is used
//! and a test failure where its name is documented.

use crate::by_name::{display_by_name, from_str_by_name};

macro_rules! refusals {
    ($($(#[$doc:meta])* $variant:ident = $name:literal;)*) => {
        /// Why an intent was refused (see the module's documentation).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum IntakeRefusal {
            $($(#[$doc])* $variant,)*
        }

        impl IntakeRefusal {
            /// Every refusal, in the order the contract documents them.
            pub const ALL: &'static [IntakeRefusal] = &[$(IntakeRefusal::$variant,)*];

            /// Every refusal's name, in the order of [`IntakeRefusal::ALL`].
            pub const NAMES: &'static [&'static str] = &[$($name,)*];

            /// The code as a sender is told it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(IntakeRefusal::$variant => $name,)*
                }
            }

            /// The refusal named `s` exactly as [`IntakeRefusal::as_str`] writes it.
            pub fn parse(s: &str) -> Option<IntakeRefusal> {
                match s {
                    $($name => Some(IntakeRefusal::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

refusals! {
    // The contract (`IntentError::code`).
    /// The message is larger than the contract allows.
    Oversized = "oversized";
    /// Not JSON, or not an intent's shape.
    Malformed = "malformed";
    /// A JSON object names a member twice.
    DuplicateMember = "duplicate_member";
    /// A string is not valid Unicode.
    InvalidUnicode = "invalid_unicode";
    /// A number no reader agrees on.
    NumberOutOfRange = "number_out_of_range";
    /// A string carries U+0000.
    NulCharacter = "nul_character";
    /// Another schema than `intent.v1`.
    UnsupportedSchema = "unsupported_schema";
    /// An action the catalogue does not have.
    UnknownAction = "unknown_action";
    /// A member breaks its rule (`field` says which).
    InvalidField = "invalid_field";
    // The capability guard (`catalogue::capabilities`).
    /// A provider the action is not served by.
    UnsupportedProvider = "unsupported_provider";
    /// The provider cannot run the action exactly once.
    ProviderCannotExecuteSafely = "provider_cannot_execute_safely";
    /// The provider cannot apply the update conditionally.
    ProviderCannotUpdateConditionally = "provider_cannot_update_conditionally";
    /// The approval window is longer than the provider keeps its idempotency keys.
    ApprovalOutlivesKey = "approval_outlives_key";
    // The store.
    /// The operation id names another snapshot.
    OperationIdConflict = "operation_id_conflict";
    // A superseding intent (`supersede`).
    /// `supersedes` names no operation the sender can see.
    SupersedesUnknownOperation = "supersedes_unknown_operation";
    /// `supersedes` names an operation of another action.
    SupersedesOtherTenantOrAction = "supersedes_other_tenant_or_action";
    /// `supersedes` names an operation someone else submitted.
    SupersedesForbidden = "supersedes_forbidden";
    /// `supersedes` names an operation a request may have gone out for.
    SupersedesExecuted = "supersedes_executed";
    // The store again.
    /// Postgres refused the values (a data exception or a constraint).
    DatabaseRefused = "database_refused";
    // The policies, the payee's directory, the tenant's records.
    /// No quorum policy covers it.
    UnknownPolicy = "unknown_policy";
    /// It names a policy version other than the one the deployment put in force for its
    /// tenant and action.
    PolicyNotInForce = "policy_not_in_force";
    /// Its policy bands amounts by currency and has no bands for its currency.
    CurrencyNotBanded = "currency_not_banded";
    /// The payee cannot be confirmed in the directory.
    PayeeUnknown = "payee_unknown";
    /// The directory did not confirm the payee's name as the account holder's (or the
    /// intent gives none), and the policy's `name_check` table refuses that result.
    PayeeNameUnconfirmed = "payee_name_unconfirmed";
    /// The provider's directory gave no answer (429, 5xx, timeout, refused connection)
    /// for as long as the intake waits for one (queue only: over HTTP it is a 503).
    PayeeDirectoryUnreachable = "payee_directory_unreachable";
    /// It names an object the fleet made or changed for another tenant.
    ObjectOfOtherTenant = "object_of_other_tenant";
    /// It names an object the fleet has no record of, and its policy does not allow that.
    ObjectUnknown = "object_unknown";
    // The payments provider spoken as Stripe, read at intake.
    /// A charge names a customer Stripe does not have.
    CustomerUnknown = "customer_unknown";
    /// A charge names a payment method Stripe does not have.
    PaymentMethodUnknown = "payment_method_unknown";
    /// A charge names a payment method that is not attached to its customer.
    PaymentMethodNotCustomers = "payment_method_not_customers";
    /// A refund names a payment Stripe does not have.
    PaymentUnknown = "payment_unknown";
    /// A refund asks for more than is left to refund of its payment.
    RefundExceedsPayment = "refund_exceeds_payment";
}

/// A name [`IntakeRefusal::parse`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown refusal {0:?}")]
pub struct UnknownRefusal(pub String);

from_str_by_name!(IntakeRefusal, UnknownRefusal);

display_by_name!(IntakeRefusal);

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_refusal_round_trips_its_name_and_names_are_unique() {
        assert_eq!(IntakeRefusal::ALL.len(), IntakeRefusal::NAMES.len());
        let mut names = HashSet::new();
        for (&refusal, &name) in IntakeRefusal::ALL.iter().zip(IntakeRefusal::NAMES) {
            assert_eq!(refusal.as_str(), name);
            assert_eq!(IntakeRefusal::parse(name), Some(refusal));
            assert_eq!(name.parse::<IntakeRefusal>(), Ok(refusal));
            assert!(names.insert(name), "{name} twice");
        }
        assert_eq!(IntakeRefusal::parse("Malformed"), None);
    }

    #[test]
    fn the_codes_of_the_refusing_modules_are_named_here() {
        let mut codes: Vec<&str> = crate::supersede::REFUSALS.to_vec();
        codes.extend(crate::catalogue::capabilities::REFUSALS);
        codes.extend([
            crate::policy::PolicyRefusal::UnknownPolicy.reason(),
            crate::policy::PolicyRefusal::ActionNotInPolicy.reason(),
            crate::policy::PolicyRefusal::NotInForce.reason(),
            crate::policy::PolicyRefusal::CurrencyNotBanded.reason(),
            crate::objects::OBJECT_OF_OTHER_TENANT,
            crate::objects::OBJECT_UNKNOWN,
        ]);
        for code in codes {
            assert!(IntakeRefusal::parse(code).is_some(), "{code}");
        }
    }
}
