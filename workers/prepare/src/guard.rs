//! The capability guard: an intent is accepted only for a provider that serves its action
//! and whose contract makes autonomous execution safe. A provider with neither idempotent
//! creates nor a lookup cannot be used: an uncertain create could never be settled. And
//! an approval may not outlive the idempotency key: every claim happens before the approval
//! expires, and the key is first used after the intent was prepared, so an approval window
//! shorter than the key's retention (minus a margin) means no request is ever sent on a key
//! the provider may have forgotten.

use fleet_core::reconcile::RETENTION_SAFETY_MARGIN_MS;
use fleet_core::Action;
use fleet_providers::Capabilities;

/// What each configured provider guarantees.
#[derive(Debug, Clone, Copy)]
pub struct ProviderCapabilities {
    pub payments: Capabilities,
    pub crm: Capabilities,
    /// How long the payments provider keeps an idempotency key.
    pub payments_key_retention_s: u64,
}

pub fn check(action: Action, provider: &str, approval_ttl_s: i64, providers: &ProviderCapabilities) -> Result<(), &'static str> {
    let caps = match (action, provider) {
        (Action::PaymentCreate | Action::RefundCreate, "payments") => providers.payments,
        (Action::CrmDealCreate | Action::CrmDealUpdate, "crm") => providers.crm,
        _ => return Err("unsupported_provider"),
    };
    match action {
        Action::PaymentCreate | Action::RefundCreate | Action::CrmDealCreate if !caps.idempotent_create && !caps.lookup => {
            Err("provider_cannot_execute_safely")
        }
        Action::CrmDealUpdate if !caps.conditional_update => Err("provider_cannot_update_conditionally"),
        Action::PaymentCreate | Action::RefundCreate if !approval_fits_key(approval_ttl_s, providers.payments_key_retention_s) => {
            Err("approval_outlives_key")
        }
        Action::PaymentCreate | Action::RefundCreate | Action::CrmDealCreate | Action::CrmDealUpdate => Ok(()),
    }
}

fn approval_fits_key(approval_ttl_s: i64, key_retention_s: u64) -> bool {
    let ttl_ms = u64::try_from(approval_ttl_s).unwrap_or(u64::MAX).saturating_mul(1000);
    ttl_ms.saturating_add(RETENTION_SAFETY_MARGIN_MS) < key_retention_s.saturating_mul(1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: Capabilities = Capabilities { idempotent_create: false, lookup: false, conditional_update: false };
    const REFERENCE: ProviderCapabilities = ProviderCapabilities {
        payments: Capabilities { idempotent_create: true, lookup: true, conditional_update: false },
        crm: Capabilities { idempotent_create: false, lookup: true, conditional_update: true },
        payments_key_retention_s: 86_400,
    };

    #[test]
    fn the_reference_providers_serve_their_actions() {
        for (action, provider) in [(Action::PaymentCreate, "payments"), (Action::RefundCreate, "payments"), (Action::CrmDealCreate, "crm"), (Action::CrmDealUpdate, "crm")] {
            assert_eq!(check(action, provider, 3600, &REFERENCE), Ok(()), "{action:?}");
        }
    }

    #[test]
    fn an_approval_may_not_outlive_the_payment_key() {
        assert_eq!(check(Action::PaymentCreate, "payments", 86_400 - 61, &REFERENCE), Ok(()));
        assert_eq!(check(Action::PaymentCreate, "payments", 86_400 - 60, &REFERENCE), Err("approval_outlives_key"));
        assert_eq!(check(Action::RefundCreate, "payments", 7 * 86_400, &REFERENCE), Err("approval_outlives_key"));
        // No key, nothing to outlive.
        assert_eq!(check(Action::CrmDealCreate, "crm", 7 * 86_400, &REFERENCE), Ok(()));
    }

    #[test]
    fn an_action_on_the_wrong_provider_is_refused() {
        assert_eq!(check(Action::PaymentCreate, "crm", 3600, &REFERENCE), Err("unsupported_provider"));
        assert_eq!(check(Action::CrmDealCreate, "stripe", 3600, &REFERENCE), Err("unsupported_provider"));
    }

    #[test]
    fn a_provider_without_idempotency_and_without_lookup_is_refused() {
        let blind = ProviderCapabilities { crm: NONE, ..REFERENCE };
        assert_eq!(check(Action::CrmDealCreate, "crm", 3600, &blind), Err("provider_cannot_execute_safely"));
        assert_eq!(check(Action::CrmDealUpdate, "crm", 3600, &blind), Err("provider_cannot_update_conditionally"));
        let keys_only = ProviderCapabilities { payments: Capabilities { idempotent_create: true, ..NONE }, ..REFERENCE };
        assert_eq!(check(Action::PaymentCreate, "payments", 3600, &keys_only), Ok(()));
    }
}
