//! The capability guard: an intent is accepted only for a provider that serves its action
//! and whose contract makes autonomous execution safe. A provider with neither idempotent
//! creates nor a lookup cannot be used: an uncertain create could never be settled.

use fleet_core::Action;
use fleet_providers::Capabilities;

/// What each configured provider guarantees.
#[derive(Debug, Clone, Copy)]
pub struct ProviderCapabilities {
    pub payments: Capabilities,
    pub crm: Capabilities,
}

pub fn check(action: Action, provider: &str, providers: &ProviderCapabilities) -> Result<(), &'static str> {
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
        Action::PaymentCreate | Action::RefundCreate | Action::CrmDealCreate | Action::CrmDealUpdate => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: Capabilities = Capabilities { idempotent_create: false, lookup: false, conditional_update: false };
    const REFERENCE: ProviderCapabilities = ProviderCapabilities {
        payments: Capabilities { idempotent_create: true, lookup: true, conditional_update: false },
        crm: Capabilities { idempotent_create: false, lookup: true, conditional_update: true },
    };

    #[test]
    fn the_reference_providers_serve_their_actions() {
        for (action, provider) in [(Action::PaymentCreate, "payments"), (Action::RefundCreate, "payments"), (Action::CrmDealCreate, "crm"), (Action::CrmDealUpdate, "crm")] {
            assert_eq!(check(action, provider, &REFERENCE), Ok(()), "{action:?}");
        }
    }

    #[test]
    fn an_action_on_the_wrong_provider_is_refused() {
        assert_eq!(check(Action::PaymentCreate, "crm", &REFERENCE), Err("unsupported_provider"));
        assert_eq!(check(Action::CrmDealCreate, "stripe", &REFERENCE), Err("unsupported_provider"));
    }

    #[test]
    fn a_provider_without_idempotency_and_without_lookup_is_refused() {
        let blind = ProviderCapabilities { crm: NONE, ..REFERENCE };
        assert_eq!(check(Action::CrmDealCreate, "crm", &blind), Err("provider_cannot_execute_safely"));
        assert_eq!(check(Action::CrmDealUpdate, "crm", &blind), Err("provider_cannot_update_conditionally"));
        let keys_only = ProviderCapabilities { payments: Capabilities { idempotent_create: true, ..NONE }, ..REFERENCE };
        assert_eq!(check(Action::PaymentCreate, "payments", &keys_only), Ok(()));
    }
}
