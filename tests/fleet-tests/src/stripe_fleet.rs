//! The workers of a Stripe test, run as real processes with the payments provider spoken
//! as Stripe: the settings they all share, and the fleet of the localstripe tests
//! (localstripe, the harness's fault-injecting proxy in front of it, and a test fleet).

use crate::{Localstripe, StripeProxy, TestFleet, WorkerProcess, LOCALSTRIPE_KEY};

/// The settings that make the payments provider Stripe at `url` with `api_key`, then
/// `extra` (a setting named again there wins). The doubles read their lists straight from
/// their store (no search lag); a call's whole timeout and a claim's lease are 1.5 s, which
/// a held answer outlasts; reconcile sweeps every 100 ms and looks again after 200 ms.
pub fn stripe_settings<'a>(
    url: &'a str,
    api_key: &'a str,
    extra: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    let mut env = vec![
        ("PAYMENTS_PROVIDER", "stripe"),
        ("PAYMENTS_URL", url),
        ("PAYMENTS_API_KEY", api_key),
        ("PAYMENTS_SEARCH_LAG_MS", "0"),
        ("PAYMENTS_TIMEOUT_MS", "1500"),
        ("LEASE_TTL_MS", "1500"),
        ("SWEEP_INTERVAL_MS", "100"),
        ("LOOKUP_RECHECK_MS", "200"),
        ("UNSTARTED_REDRIVE_MS", "500"),
    ];
    env.extend_from_slice(extra);
    env
}

/// localstripe, the proxy in front of it, and a fleet whose workers speak Stripe at the
/// proxy. localstripe ignores `Idempotency-Key` and has no Search API, so the workers run
/// with a key retention of 0 (a second request on an operation's key would show as a
/// second object) and find objects by paging lists.
pub struct LocalstripeFleet {
    pub fleet: TestFleet,
    pub stripe: Localstripe,
    pub proxy: StripeProxy,
}

impl LocalstripeFleet {
    /// With prepare in-process reading the payments provider as Stripe at the proxy (what
    /// intake shows of a customer, a card, a PaymentIntent).
    pub async fn start() -> LocalstripeFleet {
        let (stripe, proxy) = Self::double().await;
        let mut fleet = TestFleet::start().await;
        fleet.spawn_prepare_at_stripe(&proxy.base_url, LOCALSTRIPE_KEY);
        LocalstripeFleet {
            fleet,
            stripe,
            proxy,
        }
    }

    /// With prepare in-process reading the providers at the simulator, as every other
    /// test's does (intake takes a refund without reading its PaymentIntent).
    pub async fn with_prepare_at_the_simulator() -> LocalstripeFleet {
        let (stripe, proxy) = Self::double().await;
        let fleet = TestFleet::with_prepare().await;
        LocalstripeFleet {
            fleet,
            stripe,
            proxy,
        }
    }

    async fn double() -> (Localstripe, StripeProxy) {
        let stripe = Localstripe::start().await;
        let proxy = StripeProxy::start(&stripe.base_url).await;
        (stripe, proxy)
    }

    /// [`stripe_settings`] at the proxy, then `extra`.
    pub fn settings<'a>(&'a self, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut localstripe = vec![
            ("PAYMENTS_KEY_RETENTION_S", "0"),
            ("PAYMENTS_STRIPE_SEARCH", "off"),
        ];
        localstripe.extend_from_slice(extra);
        stripe_settings(&self.proxy.base_url, LOCALSTRIPE_KEY, &localstripe)
    }

    /// Starts `binary` with [`LocalstripeFleet::settings`].
    pub fn spawn(&self, binary: &str) -> WorkerProcess {
        self.fleet.spawn_process(binary, &self.settings(&[]))
    }

    pub async fn stop(self) {
        self.fleet.stop().await;
    }
}

impl TestFleet {
    /// The idempotency key stored for `op` (what a Stripe object made for it carries as
    /// `metadata[fleet_operation]`).
    pub async fn key_of(&self, op: &str) -> String {
        self.row(op).await.idempotency_key.as_str().to_owned()
    }
}
