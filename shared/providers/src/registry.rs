//! The configured providers, by the names intents use: where each is reached, what it
//! documents (search lag, how long it may still commit a request, what it guarantees)
//! and its adapter. execute and reconcile find the provider serving an operation's action
//! here; prepare and the API read only the guarantees (the capability guard's input).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use fleet_core::catalogue::{Capabilities, Dialect, ProviderCapabilities, PROVIDERS};
use fleet_core::outcome::{CallResult, Outcome};
use fleet_core::reconcile::{ProviderContract, Reading};
use fleet_core::stripe::accounts::ConnectedAccounts;
use fleet_core::ProviderName;
use fleet_runtime::{Pacer, ProviderArgs, Secret};

use crate::adapter::{
    Intake, Operation, PayeeAnswer, PayerAnswer, RefundedAnswer, Request, Unbuildable,
};
use crate::api::{ConfigError, SendGate};
use crate::client::{Adapter, Client, Endpoint, Mapping};
use crate::path::check_segment;

/// One provider as configured.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub base_url: String,
    pub api_key: Secret<String>,
    /// Whole-call timeout (connect to last body byte).
    pub timeout_ms: u64,
    /// The documented bound on how long a new effect may be missing from a search.
    pub search_lag_ms: u64,
    /// The documented bound on how long after it started a request may still commit.
    pub max_request_ms: u64,
    pub capabilities: Capabilities,
    /// How its API is spoken (`PAYMENTS_PROVIDER=stripe`: Stripe's).
    pub dialect: Dialect,
    /// Spoken as Stripe: the tenants whose requests act in a connected account of their
    /// own (`PAYMENTS_STRIPE_ACCOUNTS`).
    pub accounts: ConnectedAccounts,
}

impl ProviderConfig {
    /// The contract reconcile and execute judge by. `escalate_after_failed_lookups` is
    /// reconcile's own patience, set by its settings; here nothing escalates.
    pub fn contract(&self) -> ProviderContract {
        ProviderContract {
            search_lag_ms: self.search_lag_ms,
            max_request_ms: self.max_request_ms,
            key_retention_ms: self.capabilities.key_retention_ms(),
            escalate_after_failed_lookups: u32::MAX,
        }
    }
}

/// Every provider the catalogue's actions are served by, configured.
#[derive(Debug, Clone)]
pub struct ProviderConfigs(BTreeMap<&'static str, ProviderConfig>);

impl ProviderConfigs {
    /// From the settings (`PAYMENTS_*`, `CRM_*`, …), each provider's read from its spec.
    pub fn from_args(args: &ProviderArgs) -> ProviderConfigs {
        ProviderConfigs(
            args.iter()
                .map(|s| {
                    let config = ProviderConfig {
                        base_url: s.url.clone(),
                        api_key: s.api_key.clone(),
                        timeout_ms: s.timeout_ms,
                        search_lag_ms: s.search_lag_ms,
                        max_request_ms: s.max_request_s.saturating_mul(1000),
                        capabilities: s.capabilities,
                        dialect: s.dialect,
                        accounts: s.stripe_accounts.clone(),
                    };
                    (s.provider.as_str(), config)
                })
                .collect(),
        )
    }

    /// Every provider at `base_url` with one contract: for tests and tools that run the
    /// simulator, which serves them all.
    pub fn all_at(
        base_url: &str,
        api_key: &str,
        timeout_ms: u64,
        search_lag_ms: u64,
        max_request_ms: u64,
    ) -> ProviderConfigs {
        let at = |capabilities| ProviderConfig {
            base_url: base_url.to_owned(),
            api_key: Secret::new(api_key.to_owned()),
            timeout_ms,
            search_lag_ms,
            max_request_ms,
            capabilities,
            dialect: Dialect::Reference,
            accounts: ConnectedAccounts::default(),
        };
        ProviderConfigs(
            PROVIDERS
                .iter()
                .map(|spec| (spec.name.as_str(), at(spec.capabilities)))
                .collect(),
        )
    }

    /// The provider named `name`; panics for a name no action is served by (a caller's bug).
    pub fn provider_mut(&mut self, name: &str) -> &mut ProviderConfig {
        self.0
            .get_mut(name)
            .unwrap_or_else(|| panic!("no provider {name:?} is configured"))
    }

    /// What each provider guarantees, and what its API as configured does not serve
    /// (charges while payments are not spoken as Stripe, say): the capability guard's input.
    pub fn capabilities(&self) -> ProviderCapabilities {
        self.0
            .iter()
            .filter_map(|(name, config)| Some((ProviderName::parse(name)?.spec(), config)))
            .fold(ProviderCapabilities::default(), |all, (spec, config)| {
                all.configured(spec, config.capabilities, config.dialect)
            })
    }

    /// A client for each provider, sending at once (no rate limit).
    pub fn connect(&self) -> Result<Providers, ConfigError> {
        self.connect_paced(|_| None)
    }

    /// A client for each provider; every request to a provider `pacer_of` gives a pacer
    /// for waits for its slot first (docs/design.md#provider-rates).
    pub fn connect_paced(
        &self,
        pacer_of: impl Fn(&'static str) -> Option<Arc<dyn Pacer>>,
    ) -> Result<Providers, ConfigError> {
        let mut providers = BTreeMap::new();
        for (name, config) in &self.0 {
            let mut adapter = adapter(name, config)?;
            if let Some(pacer) = pacer_of(name) {
                adapter.api_mut().pace(pacer);
            }
            providers.insert(
                *name,
                Provider {
                    adapter,
                    config: config.clone(),
                },
            );
        }
        Ok(Providers(providers))
    }
}

/// A mapping as the registry finds it: the provider it speaks to, the dialect it speaks
/// it in, and how its client is made. `crate::MAPPINGS` lists one for each mapping.
pub(crate) struct MappingEntry {
    provider: ProviderName,
    speaks: fn(Dialect) -> bool,
    connect: fn(&ProviderConfig) -> Result<Box<dyn Adapter>, ConfigError>,
}

impl MappingEntry {
    pub(crate) const fn of<M: Mapping>() -> MappingEntry {
        MappingEntry {
            provider: M::PROVIDER,
            speaks: M::speaks,
            connect: connect::<M>,
        }
    }
}

/// The client of `M` for a provider configured so.
fn connect<M: Mapping>(config: &ProviderConfig) -> Result<Box<dyn Adapter>, ConfigError> {
    let endpoint = Endpoint {
        base_url: config.base_url.clone(),
        api_key: config.api_key.clone(),
        timeout_ms: config.timeout_ms,
    };
    let search = match config.dialect {
        Dialect::Stripe { search } => search,
        Dialect::Reference => true,
    };
    // The connected accounts are only ever set for a provider spoken as Stripe.
    Ok(Box::new(
        Client::<M>::new(endpoint)?
            .searching(search)
            .with_accounts(config.accounts.clone()),
    ))
}

/// The provider `name`'s client: the one mapping that speaks to it in its configured
/// dialect. No line here names a provider: each mapping says whom it speaks to.
fn adapter(name: &'static str, config: &ProviderConfig) -> Result<Box<dyn Adapter>, ConfigError> {
    let provider = ProviderName::parse(name).ok_or(ConfigError::UnknownProvider(name))?;
    let mapping = crate::MAPPINGS
        .iter()
        .find(|m| m.provider == provider && (m.speaks)(config.dialect))
        .ok_or(ConfigError::UnknownProvider(name))?;
    (mapping.connect)(config)
}

/// One provider: its adapter and its configuration.
#[derive(Debug)]
pub struct Provider {
    adapter: Box<dyn Adapter>,
    config: ProviderConfig,
}

impl Provider {
    pub fn contract(&self) -> ProviderContract {
        self.config.contract()
    }

    /// The one side-effecting request of `op`; `Unbuildable` also when a path segment (a
    /// target) could not be sent as one ([`crate::path`]): the stored snapshot then names
    /// no resource the provider has, and nothing is guessed.
    pub fn request(&self, op: &Operation<'_>) -> Result<Request, Unbuildable> {
        let request = self.adapter.request(op)?;
        if request
            .path
            .iter()
            .any(|segment| check_segment(segment).is_err())
        {
            return Err(Unbuildable(op.action.wire_name()));
        }
        Ok(request)
    }

    /// Sends `request` once for `op`, acting for its tenant (in the tenant's connected
    /// account, where it has one).
    pub async fn send(&self, op: &Operation<'_>, request: &Request) -> CallResult {
        self.adapter
            .api_for(op.tenant)
            .send(request, op.action.wire_name(), op.subject.reference)
            .await
    }

    /// [`Provider::send`], with `gate` run after the request's slot came and right before
    /// it is sent: `false` and nothing is sent (`NotSent`, see [`SendGate`]).
    pub async fn send_gated(
        &self,
        op: &Operation<'_>,
        request: &Request,
        gate: SendGate<'_>,
    ) -> CallResult {
        self.adapter
            .api_for(op.tenant)
            .send_gated(
                request,
                op.action.wire_name(),
                op.subject.reference,
                Some(gate),
            )
            .await
    }

    /// What the answer to `op`'s request proves, as its provider's answers read.
    pub fn classify(&self, op: &Operation<'_>, call: &CallResult) -> Outcome {
        self.adapter.classify(op, call)
    }

    /// Looks the payee `id` up in the provider's directory, checking `name` against its
    /// account's holder where the directory checks names; `None` when the provider keeps
    /// no directory. Read-only: the caller may repeat it.
    pub async fn look_up_payee(&self, id: &str, name: Option<&str>) -> Option<PayeeAnswer> {
        Some(self.adapter.look_up_payee(id, name)?.await)
    }

    /// Reads who `payload` (of `action`, for `tenant`) takes money from, when this
    /// provider describes them (a charge at Stripe); `None` otherwise. Read-only: the
    /// caller may repeat it.
    pub async fn look_up_payer(
        &self,
        tenant: &str,
        action: fleet_core::Action,
        payload: &serde_json::Value,
    ) -> Option<PayerAnswer> {
        let intent = Intake {
            tenant,
            action,
            payload,
        };
        Some(self.adapter.look_up_payer(intent)?.await)
    }

    /// Reads the payment a refund (`payload` of `action`, for `tenant`) gives money back
    /// from, when this provider describes it (Stripe); `None` otherwise. Read-only.
    pub async fn look_up_refunded(
        &self,
        tenant: &str,
        action: fleet_core::Action,
        payload: &serde_json::Value,
    ) -> Option<RefundedAnswer> {
        Some(
            self.adapter
                .look_up_refunded(Intake {
                    tenant,
                    action,
                    payload,
                })?
                .await,
        )
    }

    /// Looks `op`'s effect up and reads the answer with its action's catalogue entry.
    pub async fn look_up(&self, op: &Operation<'_>, external_id: Option<&str>) -> Reading {
        self.look_up_once(op, external_id).await.0
    }

    /// [`Provider::look_up`], with the wait the provider asked for when it refused the
    /// lookup for its rate (a 429: nothing was read, the same lookup may go again after it).
    pub async fn look_up_once(
        &self,
        op: &Operation<'_>,
        external_id: Option<&str>,
    ) -> (Reading, Option<Duration>) {
        match self.adapter.look_up(op, external_id).await {
            Ok(looked) => (
                self.adapter.read_lookup(op, looked.via, &looked.objects),
                None,
            ),
            Err(failed) => (
                Reading::failed(failed.via, &failed.error.to_string()),
                failed.error.throttled(),
            ),
        }
    }
}

/// The configured providers, with their clients.
#[derive(Debug)]
pub struct Providers(BTreeMap<&'static str, Provider>);

impl Providers {
    pub fn get(&self, provider: &str) -> Option<&Provider> {
        self.0.get(provider)
    }

    /// The provider serving `op`'s action (the capability guard admitted no other).
    pub fn serving(&self, op: &Operation<'_>) -> Option<&Provider> {
        self.get(op.action.spec().provider.as_str())
    }

    /// Every provider's name and audit delay (its maximum request time plus its search lag).
    pub fn audit_delays(&self) -> Vec<(&'static str, Duration)> {
        self.0
            .iter()
            .map(|(name, p)| {
                (
                    *name,
                    Duration::from_millis(fleet_core::reconcile::audit_delay_ms(p.contract())),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use fleet_core::{catalogue, parse_intent, Subject};

    use super::*;

    fn configs() -> ProviderConfigs {
        ProviderConfigs::all_at("http://127.0.0.1:9", "sk_test", 1_000, 0, 0)
    }

    #[test]
    fn every_provider_of_the_catalogue_is_configured_with_an_adapter() {
        let providers = configs().connect().unwrap();
        for name in catalogue::providers() {
            assert!(providers.get(name.as_str()).is_some(), "{name}");
        }
    }

    /// Adding a provider is its spec and its mapping: every spec finds a mapping for the
    /// reference protocol, and for Stripe's API when it may speak it, with no line naming
    /// the provider here.
    #[test]
    fn every_provider_spec_finds_its_mapping_for_each_api_it_may_speak() {
        let configs = configs();
        for spec in PROVIDERS {
            let name = spec.name.as_str();
            let mut config = configs.0[name].clone();
            assert!(
                adapter(name, &config).is_ok(),
                "{name}: no reference mapping"
            );
            config.dialect = Dialect::Stripe { search: false };
            assert_eq!(
                adapter(name, &config).is_ok(),
                spec.speaks_stripe(),
                "{name} spoken as Stripe"
            );
        }
        assert!(matches!(
            adapter("mystery", &configs.0["payments"]),
            Err(ConfigError::UnknownProvider("mystery"))
        ));
    }

    /// Every valid intent fixture makes a request at the provider serving its action,
    /// and another provider refuses to build it.
    #[test]
    fn every_action_makes_its_request_at_its_provider_only() {
        let reference = configs().connect().unwrap();
        // What only Stripe serves is built by the payments provider spoken as Stripe.
        let mut stripe = configs();
        stripe.provider_mut("payments").dialect = Dialect::Stripe { search: true };
        let stripe = stripe.connect().unwrap();
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/tests/fixtures/intents/valid");
        let mut built = std::collections::BTreeSet::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let intent = parse_intent(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap();
            let s = &intent.snapshot;
            let subject = Subject {
                reference: &s.operation_id,
                target: s.target.as_deref(),
                payload: &s.payload,
            };
            let op = Operation {
                action: intent.action,
                tenant: "acme",
                subject,
                idempotency_key: &s.operation_id,
                payee_version: None,
            };
            let providers = if crate::stripe::ONLY_STRIPE.contains(&intent.action) {
                &stripe
            } else {
                &reference
            };
            let request = providers.serving(&op).unwrap().request(&op).unwrap();
            assert!(!request.path.is_empty());
            // Sent under the operation's key exactly when its effect is a keyed create.
            let keyed = intent.action.spec().effect == catalogue::Effect::KeyedCreate;
            let key = keyed.then_some(s.operation_id.as_str());
            assert_eq!(request.idempotency_key.as_deref(), key, "{}", intent.action);
            for name in catalogue::providers()
                .into_iter()
                .filter(|p| *p != intent.action.spec().provider)
            {
                assert!(
                    providers.get(name.as_str()).unwrap().request(&op).is_err(),
                    "{name} built {}",
                    intent.action.wire_name()
                );
            }
            built.insert(intent.action);
        }
        assert_eq!(
            built.len(),
            fleet_core::Action::ALL.len(),
            "a valid fixture for every action"
        );
    }

    /// A target the URL would read as a step is refused, never sent as the collection.
    #[test]
    fn a_target_that_is_a_dot_segment_makes_no_request() {
        let providers = configs().connect().unwrap();
        let payload = serde_json::json!({"expected_version": 3, "patch": {"stage": "won"}});
        for (action, target) in [
            (fleet_core::Action::CrmDealUpdate, ".."),
            (fleet_core::Action::CrmDealUpdate, "."),
            (fleet_core::Action::OrderStatusChange, ".."),
        ] {
            let payload = if action == fleet_core::Action::OrderStatusChange {
                serde_json::json!({"from": "placed", "to": "shipped", "reason": "packed"})
            } else {
                payload.clone()
            };
            let op = Operation {
                action,
                tenant: "acme",
                subject: Subject {
                    reference: "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8",
                    target: Some(target),
                    payload: &payload,
                },
                idempotency_key: "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8",
                payee_version: None,
            };
            let provider = providers.serving(&op).unwrap();
            assert_eq!(
                provider.request(&op),
                Err(Unbuildable(action.wire_name())),
                "{target:?}"
            );
            let deal = Subject {
                target: Some("deal_7"),
                ..op.subject
            };
            let fine = Operation {
                subject: deal,
                ..op
            };
            assert!(provider.request(&fine).is_ok());
        }
    }
}
