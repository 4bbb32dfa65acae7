//! Adapter for the reference CRM API (docs/design.md#crm-api, Salesforce-like): no idempotency
//! keys, a non-unique external id field to search by, and versions for conditional
//! updates. A create is made safe by searching before every create; an update by
//! `If-Match` with the version the person approved.

use fleet_core::outcome::CallResult;
use fleet_runtime::{CrmArgs, Secret};
use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::{Api, ConfigError};
use crate::capabilities::Capabilities;
use crate::lookup::{get_list, get_object, LookupError};

/// How to reach the CRM API.
#[derive(Debug, Clone)]
pub struct CrmConfig {
    pub base_url: String,
    pub api_key: Secret<String>,
    pub timeout_ms: u64,
}

impl CrmConfig {
    pub fn from_args(args: &CrmArgs) -> Self {
        CrmConfig { base_url: args.crm_url.clone(), api_key: args.crm_api_key.clone(), timeout_ms: args.crm_timeout_ms }
    }
}

/// What the reference CRM guarantees: no idempotent create, lookup by external id, and
/// conditional updates. An operator can declare less (`CRM_CAPABILITIES`) for a CRM that
/// offers less; prepare then refuses what cannot be executed safely.
pub fn capabilities() -> Capabilities {
    Capabilities { idempotent_create: false, lookup: true, conditional_update: true }
}

/// The capabilities an operator declared for the CRM (`CRM_CAPABILITIES`). An unknown
/// name is an error rather than silently granting nothing.
pub fn declared_capabilities(args: &CrmArgs) -> Result<Capabilities, String> {
    let mut c = Capabilities { idempotent_create: false, lookup: false, conditional_update: false };
    for name in args.crm_capabilities.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        match name {
            "idempotent_create" => c.idempotent_create = true,
            "lookup" => c.lookup = true,
            "conditional_update" => c.conditional_update = true,
            other => return Err(format!("unknown CRM capability {other:?} (idempotent_create, lookup, conditional_update)")),
        }
    }
    Ok(c)
}

/// `POST /v1/deals` body; `external_id` is the operation id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DealRequest {
    pub external_id: String,
    pub name: String,
    pub amount_minor: i64,
    pub currency: String,
    pub stage: String,
    pub owner_id: String,
}

#[derive(Clone, Debug)]
pub struct CrmClient {
    api: Api,
}

impl CrmClient {
    pub fn new(config: CrmConfig) -> Result<Self, ConfigError> {
        Ok(CrmClient { api: Api::new("crm", &config.base_url, &config.api_key, config.timeout_ms)? })
    }

    /// `POST /v1/deals` once. The CRM deduplicates nothing: call only after a search.
    pub async fn create_deal(&self, request: &DealRequest) -> CallResult {
        let http = self.api.post(&["v1", "deals"]).json(request);
        self.api.call(http, "crm.deal.create", &request.external_id).await
    }

    /// `PATCH /v1/deals/{id}` with `If-Match: "<expected_version>"`, always.
    pub async fn update_deal(&self, operation_id: &str, deal_id: &str, expected_version: i64, patch: &Value) -> CallResult {
        let http = self.api.request(Method::PATCH, &["v1", "deals", deal_id]).header("If-Match", format!("\"{expected_version}\"")).json(patch);
        self.api.call(http, "crm.deal.update", operation_id).await
    }

    /// `GET /v1/deals?external_id=…`: every deal carrying it (eventually consistent).
    pub async fn find_deals_by_external_id(&self, external_id: &str) -> Result<Vec<Value>, LookupError> {
        get_list(self.api.get(&["v1", "deals"]).query(&[("external_id", external_id)])).await
    }

    /// `GET /v1/deals/{id}`; `None` on 404.
    pub async fn get_deal(&self, id: &str) -> Result<Option<Value>, LookupError> {
        get_object(self.api.get(&["v1", "deals", id])).await
    }
}
