//! The capability guard: an intent is accepted only for the provider that serves its
//! action, and only when that provider's guarantees make autonomous execution safe. Each
//! provider adapter declares what its provider guarantees ([`Capabilities`]); the guard
//! compares that with how the action's effect comes about ([`Effect`]):
//!
//! - a create needs idempotent creates or a lookup: without either, an uncertain create
//!   could never be settled (`provider_cannot_execute_safely`);
//! - a conditional update needs conditional updates (`provider_cannot_update_conditionally`);
//! - a keyed create's approval may not outlive the key (`approval_outlives_key`): every
//!   claim happens before the approval expires and the key is first used after the
//!   intent was prepared, so an approval window shorter than the key's retention (minus
//!   a margin) means no request is ever sent on a key the provider may have forgotten.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::guarantees::Capabilities;
use super::provider_spec::{Dialect, ProviderSpec};
use super::{Action, Effect};
use crate::reconcile::RETENTION_SAFETY_MARGIN_MS;
use crate::refusal::IntakeRefusal;

/// What each configured provider guarantees, by provider name, and the actions of the
/// catalogue a provider's configured API does not serve (an action the Stripe mapping does
/// not serve, while payments are spoken as Stripe).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderCapabilities {
    guarantees: BTreeMap<String, Capabilities>,
    unserved: BTreeSet<(String, Action)>,
}

impl ProviderCapabilities {
    pub fn with(mut self, provider: &str, capabilities: Capabilities) -> Self {
        self.guarantees.insert(provider.to_owned(), capabilities);
        self
    }

    /// The provider of `spec` as configured: what it guarantees, and each of its actions
    /// its API, spoken as `dialect`, has no request for left unserved.
    pub fn configured(
        self,
        spec: &ProviderSpec,
        capabilities: Capabilities,
        dialect: Dialect,
    ) -> Self {
        let name = spec.name.as_str();
        Action::ALL
            .into_iter()
            .filter(|a| a.spec().provider == spec.name && !spec.serves(dialect, *a))
            .fold(self.with(name, capabilities), |all, a| all.without(name, a))
    }

    /// `provider`, as configured, does not serve `action`: intents for it are refused
    /// (`unsupported_provider`) rather than approved and never sent.
    pub fn without(mut self, provider: &str, action: Action) -> Self {
        self.unserved.insert((provider.to_owned(), action));
        self
    }

    pub fn get(&self, provider: &str) -> Option<&Capabilities> {
        self.guarantees.get(provider)
    }

    fn serves(&self, provider: &str, action: Action) -> bool {
        !self.unserved.contains(&(provider.to_owned(), action))
    }
}

/// `Ok` when `action` may be prepared for `provider` with this approval window; `Err` is
/// the refusal's bounded reason (its dead-letter reason).
pub fn guard(
    action: Action,
    provider: &str,
    approval_ttl_s: i64,
    providers: &ProviderCapabilities,
) -> Result<(), &'static str> {
    let spec = action.spec();
    let caps = match providers.get(provider) {
        Some(caps) if provider == spec.provider.as_str() && providers.serves(provider, action) => {
            caps
        }
        _ => return Err(IntakeRefusal::UnsupportedProvider.as_str()),
    };
    match spec.effect {
        Effect::KeyedCreate | Effect::SearchedCreate
            if caps.idempotent_create.is_none() && !caps.lookup =>
        {
            Err(IntakeRefusal::ProviderCannotExecuteSafely.as_str())
        }
        Effect::ConditionalUpdate if !caps.conditional_update => {
            Err(IntakeRefusal::ProviderCannotUpdateConditionally.as_str())
        }
        // A provider that keeps no key (a retention of 0: a double that ignores
        // `Idempotency-Key`) is not one whose key an approval could outlive: its create
        // is sent once and never again on the key (execute and reconcile escalate where
        // a same-key retry would come), so a lookup must settle what it did.
        Effect::KeyedCreate if caps.idempotent_create == Some(Duration::ZERO) && !caps.lookup => {
            Err(IntakeRefusal::ProviderCannotExecuteSafely.as_str())
        }
        Effect::KeyedCreate
            if caps.idempotent_create != Some(Duration::ZERO)
                && !approval_fits_key(approval_ttl_s, caps.key_retention_ms()) =>
        {
            Err(IntakeRefusal::ApprovalOutlivesKey.as_str())
        }
        Effect::KeyedCreate | Effect::SearchedCreate | Effect::ConditionalUpdate => Ok(()),
    }
}

fn approval_fits_key(approval_ttl_s: i64, key_retention_ms: u64) -> bool {
    let ttl_ms = u64::try_from(approval_ttl_s)
        .unwrap_or(u64::MAX)
        .saturating_mul(1000);
    ttl_ms.saturating_add(RETENTION_SAFETY_MARGIN_MS) < key_retention_ms
}

/// Every reason [`guard`] refuses with.
pub const REFUSALS: [&str; 4] = [
    IntakeRefusal::UnsupportedProvider.as_str(),
    IntakeRefusal::ProviderCannotExecuteSafely.as_str(),
    IntakeRefusal::ProviderCannotUpdateConditionally.as_str(),
    IntakeRefusal::ApprovalOutlivesKey.as_str(),
];

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(86_400);

    /// What the reference providers guarantee, as their specs say.
    fn reference() -> ProviderCapabilities {
        super::super::PROVIDERS
            .iter()
            .fold(ProviderCapabilities::default(), |all, spec| {
                all.with(spec.name.as_str(), spec.capabilities)
            })
    }

    #[test]
    fn the_reference_providers_serve_their_actions() {
        for action in Action::ALL {
            assert_eq!(
                guard(action, action.spec().provider.as_str(), 1800, &reference()),
                Ok(()),
                "{action:?}"
            );
        }
    }

    #[test]
    fn an_approval_may_not_outlive_the_key() {
        assert_eq!(
            guard(Action::PaymentCreate, "payments", 86_400 - 61, &reference()),
            Ok(())
        );
        assert_eq!(
            guard(Action::PaymentCreate, "payments", 86_400 - 60, &reference()),
            Err("approval_outlives_key")
        );
        assert_eq!(
            guard(Action::RefundCreate, "payments", 7 * 86_400, &reference()),
            Err("approval_outlives_key")
        );
        // No key, nothing to outlive.
        assert_eq!(
            guard(Action::CrmDealCreate, "crm", 7 * 86_400, &reference()),
            Ok(())
        );
        // An e-signature key is kept one hour: a contract's approval window stays under it.
        assert_eq!(
            guard(Action::ContractSend, "esign", 3_600 - 61, &reference()),
            Ok(())
        );
        assert_eq!(
            guard(Action::ContractSend, "esign", 3_600, &reference()),
            Err("approval_outlives_key")
        );
    }

    #[test]
    fn an_action_the_configured_api_does_not_serve_is_refused() {
        let stripe = reference().without("payments", Action::PaymentCreate);
        assert_eq!(
            guard(Action::PaymentCreate, "payments", 60, &stripe),
            Err("unsupported_provider")
        );
        assert_eq!(guard(Action::RefundCreate, "payments", 60, &stripe), Ok(()));
    }

    #[test]
    fn a_provider_that_keeps_no_key_is_settled_by_lookup_only() {
        let payments = super::super::PROVIDERS[0];
        let keeps_none = payments.capabilities_keeping_keys(Duration::ZERO);
        let providers = ProviderCapabilities::default().with("payments", keeps_none);
        // No key to outlive: any approval window, the create is sent once.
        assert_eq!(
            guard(Action::RefundCreate, "payments", 7 * 86_400, &providers),
            Ok(())
        );
        let blind = Capabilities {
            lookup: false,
            ..keeps_none
        };
        assert_eq!(
            guard(
                Action::RefundCreate,
                "payments",
                60,
                &ProviderCapabilities::default().with("payments", blind)
            ),
            Err("provider_cannot_execute_safely")
        );
    }

    #[test]
    fn an_action_on_another_provider_or_an_unconfigured_one_is_refused() {
        assert_eq!(
            guard(Action::PaymentCreate, "crm", 3600, &reference()),
            Err("unsupported_provider")
        );
        assert_eq!(
            guard(Action::CrmDealCreate, "stripe", 3600, &reference()),
            Err("unsupported_provider")
        );
        assert_eq!(
            guard(
                Action::CrmDealCreate,
                "crm",
                3600,
                &ProviderCapabilities::default()
            ),
            Err("unsupported_provider")
        );
    }

    #[test]
    fn a_provider_that_cannot_be_made_safe_is_refused() {
        let blind = reference().with("crm", Capabilities::NONE);
        assert_eq!(
            guard(Action::CrmDealCreate, "crm", 3600, &blind),
            Err("provider_cannot_execute_safely")
        );
        assert_eq!(
            guard(Action::CrmDealUpdate, "crm", 3600, &blind),
            Err("provider_cannot_update_conditionally")
        );
        // An orders provider without a precondition could apply a stale transition.
        let unconditional = reference().with(
            "orders",
            Capabilities {
                lookup: true,
                ..Capabilities::NONE
            },
        );
        assert_eq!(
            guard(Action::OrderStatusChange, "orders", 3600, &unconditional),
            Err("provider_cannot_update_conditionally")
        );
        let keys_only = reference().with(
            "payments",
            Capabilities {
                idempotent_create: Some(DAY),
                ..Capabilities::NONE
            },
        );
        assert_eq!(
            guard(Action::PaymentCreate, "payments", 3600, &keys_only),
            Ok(())
        );
    }

    #[test]
    fn every_refusal_is_listed() {
        for caps in [
            Capabilities::NONE,
            Capabilities {
                idempotent_create: Some(Duration::from_secs(60)),
                lookup: true,
                conditional_update: true,
                payee_lookup: false,
                payee_precondition: false,
            },
        ] {
            for action in Action::ALL {
                let providers = ProviderCapabilities::default()
                    .with(action.spec().provider.as_str(), caps)
                    .with("other", caps);
                for provider in [action.spec().provider.as_str(), "other", "unknown"] {
                    if let Err(reason) = guard(action, provider, 3_600, &providers) {
                        assert!(REFUSALS.contains(&reason), "{reason}");
                    }
                }
            }
        }
    }
}
