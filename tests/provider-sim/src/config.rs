//! Settings of one simulator instance, and the parsing of the ones given as text.

use std::fmt;

use crate::ledger::ObjectStatus;

/// How a simulator behaves. Every field has the default of the reference provider
/// except `search_lag_ms`, which tests usually want at 0 and set explicitly otherwise.
#[derive(Clone)]
pub struct SimConfig {
    /// The only key accepted in `Authorization: Bearer <key>`.
    pub api_key: String,
    /// How long a created object stays invisible to `GET /v1/<objects>?reference=`.
    pub search_lag_ms: u64,
    /// How long an idempotency key is remembered, on the simulator's clock.
    pub key_retention_s: u64,
    /// Status of created objects when no `pending` fault applies: `succeeded` or `pending`.
    pub default_payment_status: String,
    /// How long a created deal stays invisible to `GET /v1/deals?external_id=`.
    pub crm_search_lag_ms: u64,
    /// Whether every `POST /v1/deals` answers `202 {"status": "queued"}` and creates the
    /// deal `crm_async_delay_ms` later.
    pub crm_async_create: bool,
    /// How long after a queued create the deal appears (also for the `queued` fault
    /// without its own `delay_ms`).
    pub crm_async_delay_ms: u64,
    /// How long an e-signature idempotency key is remembered (one hour for the
    /// reference API).
    pub esign_key_retention_s: u64,
    /// How long a new envelope stays invisible to `GET /v1/envelopes?external_ref=`.
    pub esign_search_lag_ms: u64,
    /// Whether envelopes are sent on their own after `esign_send_delay_ms` (otherwise they
    /// wait for `POST /_sim/envelopes/{id}/settle`).
    pub esign_auto_send: bool,
    pub esign_send_delay_ms: u64,
    /// Requests per second each provider API admits, over all of its routes (the payments
    /// API with refunds and payees, the CRM, orders, e-signatures: one bucket each,
    /// holding one second of requests); above it `429` with `Retry-After: 1`. `None`:
    /// no limit.
    pub rate_limit_per_s: Option<u32>,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            api_key: "sk_test_sim".to_owned(),
            search_lag_ms: 0,
            key_retention_s: 86_400,
            default_payment_status: "succeeded".to_owned(),
            crm_search_lag_ms: 0,
            crm_async_create: false,
            crm_async_delay_ms: 500,
            esign_key_retention_s: 3_600,
            esign_search_lag_ms: 0,
            esign_auto_send: true,
            esign_send_delay_ms: 200,
            rate_limit_per_s: None,
        }
    }
}

// Written by hand so that the API key can never reach a log line through `{:?}`.
impl fmt::Debug for SimConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimConfig")
            .field("api_key", &"<redacted>")
            .field("search_lag_ms", &self.search_lag_ms)
            .field("key_retention_s", &self.key_retention_s)
            .field("default_payment_status", &self.default_payment_status)
            .field("crm_search_lag_ms", &self.crm_search_lag_ms)
            .field("crm_async_create", &self.crm_async_create)
            .field("crm_async_delay_ms", &self.crm_async_delay_ms)
            .field("esign_key_retention_s", &self.esign_key_retention_s)
            .field("esign_search_lag_ms", &self.esign_search_lag_ms)
            .field("esign_auto_send", &self.esign_auto_send)
            .field("esign_send_delay_ms", &self.esign_send_delay_ms)
            .field("rate_limit_per_s", &self.rate_limit_per_s)
            .finish()
    }
}

impl SimConfig {
    /// The default status as a typed value; only the two statuses an accepted create can
    /// have are allowed (`failed` arrives later, by webhook, on a real provider).
    pub(crate) fn default_status(&self) -> anyhow::Result<ObjectStatus> {
        match self.default_payment_status.as_str() {
            "succeeded" => Ok(ObjectStatus::Succeeded),
            "pending" => Ok(ObjectStatus::Pending),
            other => anyhow::bail!(
                "default_payment_status must be \"succeeded\" or \"pending\", not {other:?}"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_contains_the_api_key() {
        let config = SimConfig {
            api_key: "sk_live_secret".into(),
            ..SimConfig::default()
        };
        assert!(!format!("{config:?}").contains("sk_live_secret"));
    }

    #[test]
    fn default_status_accepts_only_succeeded_or_pending() {
        let mut config = SimConfig::default();
        assert_eq!(config.default_status().unwrap(), ObjectStatus::Succeeded);
        config.default_payment_status = "pending".into();
        assert_eq!(config.default_status().unwrap(), ObjectStatus::Pending);
        config.default_payment_status = "failed".into();
        assert!(config.default_status().is_err());
    }
}
