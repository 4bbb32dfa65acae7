//! What each provider is, as data: the name its settings start with, what its contract
//! documents by default (timeouts, search lag, how long a request may still commit, how
//! long it keeps an idempotency key) and what it guarantees. The settings parser
//! (`fleet_runtime`) reads every provider's settings from its spec, and the adapters
//! (`fleet_providers`) differ only in how they map actions to requests; adding a provider
//! is a spec here and a mapping there.

use std::time::Duration;

use super::guarantees::Capabilities;
use crate::action_spec::{Action, ProviderName};

/// One provider, as its settings and the capability guard know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderSpec {
    pub name: ProviderName,
    /// What every setting of the provider starts with (`PAYMENTS_` → `PAYMENTS_URL`).
    pub env_prefix: &'static str,
    /// How `--help` names the provider ("the payments API").
    pub title: &'static str,
    pub contract: ContractDefaults,
    /// What the provider guarantees. `idempotent_create`'s retention is the default of
    /// `<PREFIX>KEY_RETENTION_S`, a setting only a provider with keyed creates has.
    pub capabilities: Capabilities,
    /// An operator may declare what the provider guarantees (`<PREFIX>CAPABILITIES`,
    /// `capabilities` as the default), for a deployment of it that offers less.
    pub declared_capabilities: bool,
    /// The provider may be Stripe instead of the reference protocol
    /// (`<PREFIX>PROVIDER=stripe`, with `<PREFIX>STRIPE_SEARCH`): the actions of its own
    /// that Stripe's mapping serves. `None`: only the reference protocol is spoken.
    pub stripe_serves: Option<&'static [Action]>,
    /// Its actions only Stripe's mapping serves (the reference protocol has no charges).
    pub only_stripe: &'static [Action],
}

/// How a provider's API is spoken: the reference protocol (docs/protocol.md), or Stripe's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    #[default]
    Reference,
    /// Stripe's API. `search`: objects Stripe's Search API covers are found with it;
    /// `false` pages their list, matched on metadata, instead (refunds and transfers,
    /// which the Search API does not cover, are always found by paging).
    Stripe { search: bool },
}

impl Dialect {
    /// The value of `<PREFIX>PROVIDER` that selects it.
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Reference => "reference",
            Dialect::Stripe { .. } => "stripe",
        }
    }
}

/// What a provider's contract documents, as the defaults of its settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContractDefaults {
    /// Whole-call timeout of one request (`<PREFIX>TIMEOUT_MS`).
    pub timeout_ms: u64,
    /// The bound on how long a new effect may be missing from a search
    /// (`<PREFIX>SEARCH_LAG_MS`); `None` for a provider whose effects are only read by id,
    /// strongly consistent: no such setting, and no lag.
    pub search_lag_ms: Option<u64>,
    /// The bound on how long after it started a request may still commit
    /// (`<PREFIX>MAX_REQUEST_S`).
    pub max_request_s: u64,
}

/// What the reference providers document: a call gets 10 s, a request may still commit
/// for two minutes after it started.
const REFERENCE: ContractDefaults = ContractDefaults {
    timeout_ms: 10_000,
    search_lag_ms: Some(60_000),
    max_request_s: 120,
};

/// What a provider without idempotent creates guarantees when an uncertain create can
/// still be settled and a change made safe: its effects are found again by lookup, and its
/// updates are conditional. The CRM and the orders API both offer exactly this.
const FOUND_AGAIN_AND_CONDITIONAL: Capabilities = Capabilities {
    idempotent_create: None,
    lookup: true,
    conditional_update: true,
    payee_lookup: false,
    payee_precondition: false,
};

const DAY: Duration = Duration::from_secs(86_400);
const HOUR: Duration = Duration::from_secs(3_600);

/// The payments API: idempotent creates (keys kept a day), lookup by reference
/// (eventually consistent) and by id, no conditional updates; its directory of
/// beneficiaries is read by id and a payment can be made conditional on the beneficiary's
/// version.
pub const PAYMENTS: ProviderSpec = ProviderSpec {
    name: ProviderName::of_spec("payments"),
    env_prefix: "PAYMENTS_",
    title: "the payments API",
    contract: REFERENCE,
    capabilities: Capabilities {
        idempotent_create: Some(DAY),
        lookup: true,
        conditional_update: false,
        payee_lookup: true,
        payee_precondition: true,
    },
    declared_capabilities: false,
    stripe_serves: Some(&[
        Action::RefundCreate,
        Action::PaymentCreate,
        Action::ChargeCreate,
    ]),
    only_stripe: &[Action::ChargeCreate],
};

/// The CRM: no idempotent creates, lookup by external id (a 5 s search lag), conditional
/// updates by version. An operator can declare less for a CRM that offers less; prepare
/// then refuses what cannot be executed safely.
pub const CRM: ProviderSpec = ProviderSpec {
    name: ProviderName::of_spec("crm"),
    env_prefix: "CRM_",
    title: "the CRM API",
    contract: ContractDefaults {
        search_lag_ms: Some(5_000),
        ..REFERENCE
    },
    capabilities: FOUND_AGAIN_AND_CONDITIONAL,
    declared_capabilities: true,
    stripe_serves: None,
    only_stripe: &[],
};

/// The orders API: no idempotent creates, lookup by order id (strongly consistent: no
/// search lag), conditional transitions (the `from` precondition).
pub const ORDERS: ProviderSpec = ProviderSpec {
    name: ProviderName::of_spec("orders"),
    env_prefix: "ORDERS_",
    title: "the orders API",
    contract: ContractDefaults {
        search_lag_ms: None,
        ..REFERENCE
    },
    capabilities: FOUND_AGAIN_AND_CONDITIONAL,
    declared_capabilities: false,
    stripe_serves: None,
    only_stripe: &[],
};

/// The e-signature API: idempotent creates with keys kept one hour only, lookup by id and
/// by `external_ref`, no conditional updates.
pub const ESIGN: ProviderSpec = ProviderSpec {
    name: ProviderName::of_spec("esign"),
    env_prefix: "ESIGN_",
    title: "the e-signature API",
    contract: REFERENCE,
    capabilities: Capabilities {
        idempotent_create: Some(HOUR),
        lookup: true,
        conditional_update: false,
        payee_lookup: false,
        payee_precondition: false,
    },
    declared_capabilities: false,
    stripe_serves: None,
    only_stripe: &[],
};

/// Every provider's spec: the one list of the providers fleet knows. A name is a provider's
/// only when it is here (`ProviderName::parse`); `fleetctl migrate` writes these names into
/// the database's `providers` table, which the operations' `provider` column references.
pub static PROVIDERS: &[&ProviderSpec] = &[&PAYMENTS, &CRM, &ORDERS, &ESIGN];

impl ProviderName {
    /// The provider `s` names, if the catalogue has its spec.
    pub fn parse(s: &str) -> Option<ProviderName> {
        PROVIDERS
            .iter()
            .map(|spec| spec.name)
            .find(|p| p.as_str() == s)
    }

    /// Every provider, in the order of their specs.
    pub fn all() -> impl Iterator<Item = ProviderName> {
        PROVIDERS.iter().map(|spec| spec.name)
    }

    /// The provider's spec.
    pub fn spec(self) -> &'static ProviderSpec {
        PROVIDERS
            .iter()
            .find(|spec| spec.name == self)
            .expect("a ProviderName is only ever one of the specs' names")
    }
}

impl ProviderSpec {
    /// Whether it may be spoken as Stripe (`<PREFIX>PROVIDER`).
    pub fn speaks_stripe(&self) -> bool {
        self.stripe_serves.is_some()
    }

    /// Whether the provider, its API spoken as `dialect`, serves `action`: one of its
    /// own actions, which that API has a request for.
    pub fn serves(&self, dialect: Dialect, action: Action) -> bool {
        action.spec().provider == self.name
            && match dialect {
                Dialect::Reference => !self.only_stripe.contains(&action),
                Dialect::Stripe { .. } => self
                    .stripe_serves
                    .is_some_and(|served| served.contains(&action)),
            }
    }

    /// The name of one of the provider's settings: `env("URL")` is `PAYMENTS_URL`.
    pub fn env(&self, setting: &str) -> String {
        format!("{}{setting}", self.env_prefix)
    }

    /// Whether the provider has a key retention to set: it deduplicates creates by key,
    /// and what it guarantees is not declared by the operator instead.
    pub fn has_key_retention(&self) -> bool {
        self.capabilities.idempotent_create.is_some() && !self.declared_capabilities
    }

    /// What the provider guarantees when it keeps a key `key_retention`.
    pub fn capabilities_keeping_keys(&self, key_retention: Duration) -> Capabilities {
        Capabilities {
            idempotent_create: self.capabilities.idempotent_create.map(|_| key_retention),
            ..self.capabilities
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_has_its_spec_and_a_prefix_of_its_own() {
        let mut prefixes = std::collections::BTreeSet::new();
        for name in ProviderName::all() {
            let spec = name.spec();
            assert_eq!(spec.name, name);
            assert_eq!(ProviderName::parse(name.as_str()), Some(name));
            assert_eq!(serde_json::to_value(name).unwrap(), name.as_str());
            assert_eq!(
                spec.env_prefix,
                format!("{}_", name.as_str().to_uppercase())
            );
            assert!(prefixes.insert(spec.env_prefix));
        }
        assert_eq!(prefixes.len(), PROVIDERS.len(), "a name is one spec's only");
        assert_eq!(ProviderName::parse("stripe"), None);
    }

    #[test]
    fn only_a_provider_with_keyed_creates_has_a_retention_to_set() {
        assert!(PAYMENTS.has_key_retention());
        assert!(ESIGN.has_key_retention());
        assert!(!CRM.has_key_retention());
        assert!(!ORDERS.has_key_retention());
        let week = Duration::from_secs(7 * 86_400);
        assert_eq!(
            PAYMENTS.capabilities_keeping_keys(week).idempotent_create,
            Some(week)
        );
        assert_eq!(ORDERS.capabilities_keeping_keys(week), ORDERS.capabilities);
    }

    #[test]
    fn a_provider_serves_its_own_actions_its_api_has_a_request_for() {
        let stripe = Dialect::Stripe { search: true };
        for action in Action::ALL {
            let own = action.spec().provider.spec();
            let charge = action == Action::ChargeCreate;
            assert_eq!(own.serves(Dialect::Reference, action), !charge, "{action}");
            assert_eq!(own.serves(stripe, action), own.speaks_stripe(), "{action}");
            for other in PROVIDERS.iter().filter(|p| p.name != own.name) {
                assert!(!other.serves(Dialect::Reference, action), "{action}");
                assert!(!other.serves(stripe, action), "{action}");
            }
        }
        assert!(PAYMENTS.speaks_stripe() && !CRM.speaks_stripe());
    }
}
