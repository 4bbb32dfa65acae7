//! The one adapter shell every provider shares: a [`Client`] holds the provider's
//! endpoint ([`Api`]) and is told by the provider's [`Mapping`] what to send. What differs
//! between providers is only their mapping: how each action they serve becomes its one
//! side-effecting request, and how its effect is found again.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use fleet_core::catalogue::{Dialect, Effect};
use fleet_core::outcome::{CallResult, Outcome};
use fleet_core::reconcile::Reading;
use fleet_core::stripe::accounts::ConnectedAccounts;
use fleet_core::ProviderName;
use fleet_runtime::{ProviderSettings, Secret};
use serde_json::Value;

use crate::adapter::{
    BoxFuture, Intake, LookFailed, Looked, Operation, PayeeAnswer, PayerAnswer, RefundedAnswer,
    Request, Unbuildable,
};
use crate::api::{Api, ConfigError};

/// How to reach a provider's API.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub base_url: String,
    pub api_key: Secret<String>,
    /// Whole-call timeout (connect to last body byte).
    pub timeout_ms: u64,
}

impl Endpoint {
    pub fn from_settings(settings: &ProviderSettings) -> Self {
        Endpoint {
            base_url: settings.url.clone(),
            api_key: settings.api_key.clone(),
            timeout_ms: settings.timeout_ms,
        }
    }
}

/// One provider's mapping: what it alone says. A mapping holds nothing: the client it
/// is given holds the endpoint.
pub trait Mapping: Sized + Send + Sync + 'static {
    /// The provider it speaks to.
    const PROVIDER: ProviderName;

    /// Whether it speaks its provider's API as `dialect`: the reference protocol, unless
    /// the mapping is of another API the provider may speak (Stripe's).
    fn speaks(dialect: Dialect) -> bool {
        dialect == Dialect::Reference
    }

    /// The one side-effecting request of `op`, built from the approved snapshot alone;
    /// `Unbuildable` for an action the provider does not serve.
    fn request(op: &Operation<'_>) -> Result<Request, Unbuildable>;

    /// Read-only: the provider objects that show `op`'s effect, by the effect's id when
    /// it is known, else by the operation's reference or its target.
    fn look_up<'a>(
        client: &'a Client<Self>,
        op: &'a Operation<'a>,
        external_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Looked, LookFailed>>;

    /// Read-only: the payee `id` in the provider's directory, for a provider that keeps
    /// one (`None` otherwise), with the check of `name` against its account's holder when
    /// the directory checks names (docs/protocol.md#payee-directory).
    fn look_up_payee<'a>(
        _client: &'a Client<Self>,
        _id: &'a str,
        _name: Option<&'a str>,
    ) -> Option<BoxFuture<'a, PayeeAnswer>> {
        None
    }

    /// Read-only: who an action's payload takes money from, at a provider whose objects
    /// describe them (Stripe's customer and saved payment method, for a charge), judged
    /// into payee evidence. `None`: the action names no such party at this provider.
    fn look_up_payer<'a>(
        _client: &'a Client<Self>,
        _intent: Intake<'a>,
    ) -> Option<BoxFuture<'a, PayerAnswer>> {
        None
    }

    /// Read-only: the payment a refund gives money back from, at a provider whose objects
    /// say whose it is and what is left of it (Stripe). `None`: not read at this provider.
    fn look_up_refunded<'a>(
        _client: &'a Client<Self>,
        _intent: Intake<'a>,
    ) -> Option<BoxFuture<'a, RefundedAnswer>> {
        None
    }

    /// What the answer to `op`'s request proves. The reference protocol's answers read
    /// as the action's catalogue entry says; a provider with answers of its own (Stripe)
    /// reads them with its rules.
    fn classify(op: &Operation<'_>, call: &CallResult) -> Outcome {
        op.action.spec().classify(call, &op.subject)
    }

    /// What the objects a lookup returned prove about `op` (as for [`Mapping::classify`]).
    fn read_lookup(op: &Operation<'_>, via: &str, objects: &[Value]) -> Reading {
        op.action.spec().read_lookup(&op.subject, via, objects)
    }
}

/// A pooled client for the provider `M` maps. Cheap to clone (the pool is shared).
pub struct Client<M> {
    api: Api,
    /// Whether objects are found with the provider's search where it has one that covers
    /// them (Stripe's Search API, `PAYMENTS_STRIPE_SEARCH`), rather than by paging lists.
    search: bool,
    /// The tenants whose requests act in a connected account of their own
    /// (`PAYMENTS_STRIPE_ACCOUNTS`); empty for every other provider.
    accounts: Arc<ConnectedAccounts>,
    mapping: PhantomData<fn() -> M>,
}

impl<M> Clone for Client<M> {
    fn clone(&self) -> Self {
        Client {
            api: self.api.clone(),
            search: self.search,
            accounts: self.accounts.clone(),
            mapping: PhantomData,
        }
    }
}

impl<M> fmt::Debug for Client<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client").field("api", &self.api).finish()
    }
}

impl<M: Mapping> Client<M> {
    pub fn new(endpoint: Endpoint) -> Result<Self, ConfigError> {
        Ok(Client {
            api: Api::new(
                M::PROVIDER.as_str(),
                &endpoint.base_url,
                &endpoint.api_key,
                endpoint.timeout_ms,
            )?,
            search: true,
            accounts: Arc::default(),
            mapping: PhantomData,
        })
    }

    /// The same client, acting for each tenant of `accounts` in its connected account.
    pub fn with_accounts(self, accounts: ConnectedAccounts) -> Self {
        Client {
            accounts: Arc::new(accounts),
            ..self
        }
    }

    /// The same client, finding objects with the provider's search (`true`, the default)
    /// or by paging lists (`false`).
    pub fn searching(self, search: bool) -> Self {
        Client { search, ..self }
    }
}

impl<M> Client<M> {
    /// The provider's endpoint (its requests are sent through it).
    pub(crate) fn api(&self) -> &Api {
        &self.api
    }

    /// Whether objects are found with the provider's search ([`Client::searching`]).
    pub fn searches(&self) -> bool {
        self.search
    }

    /// The same client, every request it makes acting for `tenant`: in the tenant's
    /// connected account when it has one (`Stripe-Account`), else on the key's own.
    pub fn for_tenant(&self, tenant: &str) -> Self {
        Client {
            api: self.api.in_account(self.accounts.of(tenant)),
            ..self.clone()
        }
    }

    /// The connected account this client's requests act in ([`Client::for_tenant`]).
    pub fn account(&self) -> Option<&str> {
        self.api.account()
    }
}

/// The request `M` makes of `op`, as the shell sends it: a keyed create (the effect its
/// action's catalogue entry names) under the operation's idempotency key, the same on
/// every attempt; any other request without one. Mappings never add the key themselves.
pub(crate) fn request_of<M: Mapping>(op: &Operation<'_>) -> Result<Request, Unbuildable> {
    let request = M::request(op)?;
    Ok(match op.action.spec().effect {
        Effect::KeyedCreate => request.with_key(op.idempotency_key),
        Effect::SearchedCreate | Effect::ConditionalUpdate => request,
    })
}

/// A provider's client, whatever its mapping: what the registry holds.
pub(crate) trait Adapter: Send + Sync + fmt::Debug {
    /// The same, to give it a pace (`Providers` does, for a rate-limited provider).
    fn api_mut(&mut self) -> &mut Api;

    /// The endpoint as it acts for `tenant` ([`Client::for_tenant`]).
    fn api_for(&self, tenant: &str) -> Api;

    fn request(&self, op: &Operation<'_>) -> Result<Request, Unbuildable>;

    fn look_up<'a>(
        &'a self,
        op: &'a Operation<'a>,
        external_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Looked, LookFailed>>;

    fn look_up_payee<'a>(
        &'a self,
        id: &'a str,
        name: Option<&'a str>,
    ) -> Option<BoxFuture<'a, PayeeAnswer>>;

    fn look_up_payer<'a>(&'a self, intent: Intake<'a>) -> Option<BoxFuture<'a, PayerAnswer>>;

    fn look_up_refunded<'a>(&'a self, intent: Intake<'a>) -> Option<BoxFuture<'a, RefundedAnswer>>;

    fn classify(&self, op: &Operation<'_>, call: &CallResult) -> Outcome;

    fn read_lookup(&self, op: &Operation<'_>, via: &str, objects: &[Value]) -> Reading;
}

impl<M: Mapping> Adapter for Client<M> {
    fn api_mut(&mut self) -> &mut Api {
        &mut self.api
    }

    fn api_for(&self, tenant: &str) -> Api {
        self.for_tenant(tenant).api
    }

    fn request(&self, op: &Operation<'_>) -> Result<Request, Unbuildable> {
        request_of::<M>(op)
    }

    fn look_up<'a>(
        &'a self,
        op: &'a Operation<'a>,
        external_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Looked, LookFailed>> {
        // Every read of the lookup acts for the operation's tenant.
        let client = self.for_tenant(op.tenant);
        Box::pin(async move { M::look_up(&client, op, external_id).await })
    }

    fn look_up_payee<'a>(
        &'a self,
        id: &'a str,
        name: Option<&'a str>,
    ) -> Option<BoxFuture<'a, PayeeAnswer>> {
        M::look_up_payee(self, id, name)
    }

    fn look_up_payer<'a>(&'a self, intent: Intake<'a>) -> Option<BoxFuture<'a, PayerAnswer>> {
        M::look_up_payer(self, intent)
    }

    fn look_up_refunded<'a>(&'a self, intent: Intake<'a>) -> Option<BoxFuture<'a, RefundedAnswer>> {
        M::look_up_refunded(self, intent)
    }

    fn classify(&self, op: &Operation<'_>, call: &CallResult) -> Outcome {
        M::classify(op, call)
    }

    fn read_lookup(&self, op: &Operation<'_>, via: &str, objects: &[Value]) -> Reading {
        M::read_lookup(op, via, objects)
    }
}
