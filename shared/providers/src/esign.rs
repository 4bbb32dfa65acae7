//! Mapping for the reference e-signature API: serves `contract.send`. An envelope is
//! created under an idempotency key the provider keeps for one hour only, then sent
//! asynchronously (webhooks `envelope.sent` / `envelope.delivery_failed`); envelopes are
//! found again by id or by `external_ref` (our operation id), with a search lag.

use fleet_core::actions::contract_send::ContractSendPayload;
use fleet_core::catalogue::provider_spec;
use fleet_core::{Action, ProviderName};
use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::adapter::{
    by_id_else, looked, BoxFuture, LookFailed, Looked, Operation, Request, Unbuildable,
};
use crate::client::{Client, Mapping};
use crate::lookup::LookupError;

/// `POST /v1/envelopes` body; `external_ref` is the operation id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvelopeRequest {
    pub external_ref: String,
    pub template_id: String,
    pub recipient_id: String,
    pub document_sha256: String,
    pub subject: String,
}

/// The e-signature API's mapping.
#[derive(Debug)]
pub enum Esign {}

/// A pooled client for the e-signature API.
pub type EsignClient = Client<Esign>;

impl Client<Esign> {
    /// `GET /v1/envelopes/{id}` (strongly consistent); `None` on 404.
    pub async fn get_envelope(&self, id: &str) -> Result<Option<Value>, LookupError> {
        self.api().object(&["v1", "envelopes", id]).await
    }

    /// `GET /v1/envelopes?external_ref=…`: every envelope carrying it (eventually consistent).
    pub async fn find_envelopes_by_external_ref(
        &self,
        external_ref: &str,
    ) -> Result<Vec<Value>, LookupError> {
        self.api()
            .list(&["v1", "envelopes"], "external_ref", external_ref)
            .await
    }
}

impl Mapping for Esign {
    const PROVIDER: ProviderName = provider_spec::ESIGN.name;

    fn request(op: &Operation<'_>) -> Result<Request, Unbuildable> {
        match op.action {
            Action::ContractSend => {
                let p: ContractSendPayload = op.payload()?;
                let body = EnvelopeRequest {
                    external_ref: op.subject.reference.to_owned(),
                    template_id: p.template_id,
                    recipient_id: p.recipient_id,
                    document_sha256: p.document_sha256,
                    subject: p.subject,
                };
                Ok(Request::new(Method::POST, &["v1", "envelopes"], &body))
            }
            other => Err(Unbuildable(other.wire_name())),
        }
    }

    /// By the envelope's id when known; not there, or no id yet: the search by
    /// `external_ref`, which the lag rules judge.
    fn look_up<'a>(
        client: &'a EsignClient,
        op: &'a Operation<'a>,
        external_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Looked, LookFailed>> {
        let reference = op.subject.reference;
        let search = async {
            let found = client.find_envelopes_by_external_ref(reference).await;
            looked("external_ref", found)
        };
        Box::pin(by_id_else(
            external_id.map(|id| client.get_envelope(id)),
            search,
        ))
    }
}
