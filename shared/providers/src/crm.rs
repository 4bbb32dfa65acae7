//! Mapping for the reference CRM API (Salesforce-like): serves `crm.deal.create` and
//! `crm.deal.update`. No idempotency keys, a non-unique external id field to search by,
//! and versions for conditional updates. A create is made safe by searching before every
//! create; an update by `If-Match` with the version the person approved.

use fleet_core::actions::deal_create::DealCreatePayload;
use fleet_core::actions::deal_update::DealUpdatePayload;
use fleet_core::catalogue::provider_spec;
use fleet_core::{Action, ProviderName};
use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::adapter::{
    looked, looked_one, BoxFuture, LookFailed, Looked, Operation, Request, Unbuildable,
};
use crate::client::{Client, Mapping};
use crate::lookup::LookupError;

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

/// The CRM API's mapping.
#[derive(Debug)]
pub enum Crm {}

/// A pooled client for the CRM API.
pub type CrmClient = Client<Crm>;

impl Client<Crm> {
    /// `GET /v1/deals?external_id=…`: every deal carrying it (eventually consistent).
    pub async fn find_deals_by_external_id(
        &self,
        external_id: &str,
    ) -> Result<Vec<Value>, LookupError> {
        self.api()
            .list(&["v1", "deals"], "external_id", external_id)
            .await
    }

    /// `GET /v1/deals/{id}`; `None` on 404.
    pub async fn get_deal(&self, id: &str) -> Result<Option<Value>, LookupError> {
        self.api().object(&["v1", "deals", id]).await
    }
}

impl Mapping for Crm {
    const PROVIDER: ProviderName = provider_spec::CRM.name;

    /// `POST /v1/deals` (the CRM deduplicates nothing: execute sends it only after a
    /// search), or `PATCH /v1/deals/{id}` with `If-Match: "<expected_version>"`, always.
    fn request(op: &Operation<'_>) -> Result<Request, Unbuildable> {
        match op.action {
            Action::CrmDealCreate => {
                let p: DealCreatePayload = op.payload()?;
                let body = DealRequest {
                    external_id: op.subject.reference.to_owned(),
                    name: p.name,
                    amount_minor: p.amount_minor,
                    currency: p.currency,
                    stage: p.stage,
                    owner_id: p.owner_id,
                };
                Ok(Request::new(Method::POST, &["v1", "deals"], &body))
            }
            Action::CrmDealUpdate => {
                let p: DealUpdatePayload = op.payload()?;
                Ok(
                    Request::new(Method::PATCH, &["v1", "deals", op.target()?], &p.patch)
                        .with_if_match(p.expected_version),
                )
            }
            other => Err(Unbuildable(other.wire_name())),
        }
    }

    /// A create by the search on our external id (eventually consistent); an update by
    /// the deal it changed.
    fn look_up<'a>(
        client: &'a CrmClient,
        op: &'a Operation<'a>,
        _external_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Looked, LookFailed>> {
        Box::pin(async move {
            match op.target() {
                Ok(deal_id) if op.action == Action::CrmDealUpdate => {
                    looked_one("deal", client.get_deal(deal_id).await)
                }
                _ => looked(
                    "external_id_search",
                    client.find_deals_by_external_id(op.subject.reference).await,
                ),
            }
        })
    }
}
