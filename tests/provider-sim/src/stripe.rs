//! A simulator of the subset of Stripe's API that the payments provider spoken as Stripe
//! uses (`PAYMENTS_PROVIDER=stripe`), with what a third-party double such as localstripe
//! does not do, so that the fleet's claims about Stripe can be tested against Stripe's
//! documented behaviour rather than assumed:
//!
//! - **idempotency keys** (<https://docs.stripe.com/api/idempotent_requests>): the first
//!   answer of an executed `POST` is saved under its `Idempotency-Key`; the same key with
//!   the same parameters gets that answer again with `Idempotent-Replayed: true`, with
//!   other parameters (or on another path) a 400 `idempotency_error`. A key is forgotten
//!   after [`StripeSimConfig::key_retention`]. A request refused before it executed (its
//!   key, its parameters, the rate limit) saves nothing;
//! - **a lagging search** (<https://docs.stripe.com/search>): a PaymentIntent appears in
//!   `GET /v1/payment_intents/search` only [`StripeSimConfig::search_lag`] after it was
//!   created; lists and reads by id are up to date at once;
//! - **a rate limit** (<https://docs.stripe.com/rate-limits>): above
//!   [`StripeSimConfig::rate_limit_per_s`] requests in a second, `429` with a
//!   `rate_limit` error and `Stripe-Should-Retry: true`, nothing executed;
//! - **form-encoded bodies**, a **Bearer key** (401 otherwise) and Stripe's **error
//!   shape** `{"error": {"type", "code", "message"}}` (<https://docs.stripe.com/api/errors>).
//!
//! - **connected accounts** (<https://docs.stripe.com/connect/authentication>): a request
//!   with `Stripe-Account: acct_…` acts inside that account, one without it on the
//!   platform's. Every object lives in the account of the request that made it (or that
//!   the test put it in), and a request sees, finds, lists, searches and refunds only its
//!   own account's; idempotency keys are kept per account.
//!
//! Served: `POST /v1/transfers`, `GET /v1/transfers/{id}`, `GET /v1/transfers`
//! (`transfer_group`, `limit`, `starting_after`); `POST /v1/payment_intents` (a confirmed
//! one is paid by a charge, its `latest_charge`), `GET /v1/payment_intents/{id}`
//! (`expand[]=latest_charge`, `expand[]=customer`), `GET /v1/payment_intents` (`customer`,
//! paging), `GET /v1/payment_intents/search` (`query=metadata['k']:'v'`, `limit`, `page`);
//! `GET /v1/charges/{id}`; `POST /v1/refunds` (of a `payment_intent` or a `charge`),
//! `GET /v1/refunds/{id}`, `GET /v1/refunds` (`payment_intent`, `charge`, paging);
//! `GET /v1/customers/{id}` and `GET /v1/payment_methods/{id}` (those the test put);
//! `GET /v1/accounts/{id}` (the connected accounts the test put).
//! A transfer above the platform's balance ([`StripeSimConfig::balance_minor`]) is refused
//! as Stripe refuses it (400 `balance_insufficient`), after it executed: the refusal is
//! saved under its key.
//!
//! Faults are armed by the test holding the [`StripeSim`], for the next create
//! ([`StripeFault`]); what was asked and what the simulator holds are read from it. It
//! runs in-process ([`StripeSim::start`]), served by the same connection loop as the
//! reference simulator, so a fault can close a connection without answering.

mod charges;
mod form;
mod http;
mod state;

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::server::RunningSim;
pub use state::SeenRequest;
use state::{Stored, StripeState};

/// How the Stripe simulator behaves.
#[derive(Clone)]
pub struct StripeSimConfig {
    /// The only secret key accepted as `Authorization: Bearer <key>`.
    pub api_key: String,
    /// How long a saved answer is kept under its idempotency key (Stripe: at least 24 h).
    pub key_retention: Duration,
    /// How long a new PaymentIntent is missing from the search.
    pub search_lag: Duration,
    /// Requests admitted in any one second (`None`: no limit); above it, 429.
    pub rate_limit_per_s: Option<u32>,
    /// The platform's available balance, in minor units: a transfer above what is left of
    /// it is refused `balance_insufficient` (`None`: unlimited).
    pub balance_minor: Option<i64>,
}

impl Default for StripeSimConfig {
    fn default() -> Self {
        StripeSimConfig {
            api_key: STRIPE_SIM_KEY.to_owned(),
            key_retention: Duration::from_secs(86_400),
            search_lag: Duration::ZERO,
            rate_limit_per_s: None,
            balance_minor: None,
        }
    }
}

// By hand, so that the key never reaches a log line through `{:?}`.
impl fmt::Debug for StripeSimConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StripeSimConfig")
            .field("api_key", &"<redacted>")
            .field("key_retention", &self.key_retention)
            .field("search_lag", &self.search_lag)
            .field("rate_limit_per_s", &self.rate_limit_per_s)
            .field("balance_minor", &self.balance_minor)
            .finish()
    }
}

/// The key the simulator accepts unless configured otherwise.
pub const STRIPE_SIM_KEY: &str = "sk_test_fleet_stripe_sim";

/// What the simulator does to the next create (`POST`) it receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StripeFault {
    /// Executed and saved under its key; the connection is then closed without a byte of
    /// the answer.
    DropAnswer,
    /// As [`StripeFault::DropAnswer`], and the object stays out of lists for this long
    /// (a list read behind the write it follows): a lookup finds nothing meanwhile.
    DropAnswerUnlisted(Duration),
    /// A 500 `api_error` answered at once; nothing executed, nothing saved.
    ServerErrorBeforeExecuting,
    /// The answer of the rate limit (429 `rate_limit`, `Stripe-Should-Retry: true`), as
    /// if other requests had used up this second: nothing executed, nothing saved.
    RateLimited,
}

/// A running Stripe simulator; it stops when dropped.
pub struct StripeSim {
    /// `http://127.0.0.1:<port>`: what `PAYMENTS_URL` is set to.
    pub base_url: String,
    state: Arc<Mutex<StripeState>>,
    _running: RunningSim,
}

impl StripeSim {
    /// Starts one on a free loopback port.
    pub async fn start(config: StripeSimConfig) -> anyhow::Result<StripeSim> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let state = Arc::new(Mutex::new(StripeState::new(config)));
        let running = crate::server::serve(http::router(state.clone()), listener)?;
        Ok(StripeSim {
            base_url: running.base_url.clone(),
            state,
            _running: running,
        })
    }

    /// Arms `fault` for the next create.
    pub fn arm(&self, fault: StripeFault) {
        self.lock().faults.push_back(fault);
    }

    /// Puts a connected account (a Stripe Account object, its `id` the key), or replaces
    /// the one with its id: what `GET /v1/accounts/{id}` answers from now on.
    pub fn put_account(&self, account: Value) {
        let id = account["id"].as_str().unwrap_or_default().to_owned();
        self.lock().accounts.insert(id, account);
    }

    /// Puts a customer (a Stripe Customer object, its `id` the key) in `account` (`None`:
    /// the platform's): what `GET /v1/customers/{id}` answers there, and what
    /// `expand[]=customer` expands to.
    pub fn put_customer(&self, account: Option<&str>, customer: Value) {
        let mut state = self.lock();
        put(&mut state.customers, account, customer);
    }

    /// Puts a payment method (a Stripe PaymentMethod object: its `customer`, its `card`)
    /// in `account`: what `GET /v1/payment_methods/{id}` answers there, and the card a
    /// PaymentIntent confirmed with it is charged to.
    pub fn put_payment_method(&self, account: Option<&str>, method: Value) {
        let mut state = self.lock();
        put(&mut state.payment_methods, account, method);
    }

    /// Every PaymentIntent made in `account` (`None`: the platform's), oldest first.
    pub fn payment_intents_in(&self, account: Option<&str>) -> Vec<Value> {
        in_account(&self.lock().payment_intents, account)
    }

    /// Every refund made in `account` (`None`: the platform's), oldest first.
    pub fn refunds_in(&self, account: Option<&str>) -> Vec<Value> {
        in_account(&self.lock().refunds, account)
    }

    /// Every transfer made, in every account, oldest first.
    pub fn transfers(&self) -> Vec<Value> {
        self.lock()
            .transfers
            .iter()
            .map(|t| t.object.clone())
            .collect()
    }

    /// Every PaymentIntent made, in every account, oldest first.
    pub fn payment_intents(&self) -> Vec<Value> {
        self.lock()
            .payment_intents
            .iter()
            .map(|p| p.object.clone())
            .collect()
    }

    /// Every request received under `/v1`, in order, with what it was answered.
    pub fn requests(&self) -> Vec<SeenRequest> {
        self.lock().log.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, StripeState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Puts `object` in `account`, in place of the one with its id there.
fn put(held: &mut Vec<Stored>, account: Option<&str>, object: Value) {
    held.retain(|o| !(o.in_account(account) && o.object["id"] == object["id"]));
    held.push(Stored::new(object, account, std::time::Instant::now()));
}

fn in_account(held: &[Stored], account: Option<&str>) -> Vec<Value> {
    held.iter()
        .filter(|o| o.in_account(account))
        .map(|o| o.object.clone())
        .collect()
}
