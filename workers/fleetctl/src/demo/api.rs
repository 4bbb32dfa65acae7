//! The demo's agent and approvers: the agent submits the seed example through the HTTP
//! API with a token of its own, and two approvers decide through the same API with
//! tokens of theirs, as people would; the demo prints where the API is and how to call it.
//! Each approver also has a signing key, generated into a directory of the demo's own and
//! registered as an administrator would, for the approvals whose policy asks for a
//! signature.

use std::path::Path;

use anyhow::Context;
use chrono::Utc;
use fleet_core::{ApproverKey, Role};
use fleet_runtime::Secret;
use fleet_store::Store;
use reqwest::StatusCode;

use super::intents::DemoIntent;
use crate::api_client::ApiClient;

const AGENT: &str = "demo-agent";
/// Two people, so that a payment whose quorum policy asks for two distinct approvers can
/// be approved.
pub const APPROVERS: [&str; 2] = ["demo-approver", "demo-approver-2"];

/// The administrator who registers the demo approvers' keys; their own key is registered
/// with a root key the demo makes for itself (a deployment's would be its evidence key).
const ADMIN: &str = "demo-admin";

/// A demo approver: a decision client with its token, and its signing key.
pub struct Approver {
    pub name: &'static str,
    pub client: ApiClient,
    key: ApproverKey,
}

impl Approver {
    /// Approves `hash` of `op`; with `sign`, as `fleetctl approve --key` does: the
    /// statement rebuilt from the snapshot fetched, signed with this approver's key.
    pub async fn approve(
        &self,
        op: &str,
        hash: &str,
        sign: bool,
    ) -> anyhow::Result<fleet_core::OperationView> {
        let body = if sign {
            let view = self.client.operation(op).await?;
            let statement = crate::decide::statement_of(&view, hash, Utc::now())?;
            crate::decide::signed_body(&statement, &self.key)
        } else {
            serde_json::json!({ "payload_hash": hash })
        };
        self.client.decide(op, "approve", body).await
    }
}

/// Each demo approver, with a fresh token granted `tenant` and a new key pair written to
/// `keys` (private key 0600) and registered for it.
pub async fn approvers(
    store: &Store,
    api_url: &str,
    tenant: &str,
    keys: &Path,
) -> anyhow::Result<Vec<Approver>> {
    let mut approvers = Vec::new();
    let (root, admin) = (crate::key::new_key()?, crate::key::new_key()?);
    crate::key::bootstrap_admin(store, ADMIN, &admin, &root, "fleetctl demo").await?;
    for name in APPROVERS {
        let (token, _, _) =
            crate::token::issue(store, name, Role::Approver, &[tenant.to_owned()]).await?;
        let path = keys.join(format!("{name}.key"));
        crate::key::write_private(&path, &crate::key::new_key()?)?;
        // Read back as `fleetctl approve --key` reads it.
        let key = crate::key::read_private(&path)?;
        match store
            .add_approver_key(
                name,
                &key.public_key(),
                "fleetctl demo",
                fleet_core::key_registration::RegistrarKey::Admin(&admin),
            )
            .await?
        {
            fleet_store::KeyAdded::Added { .. } => {}
            other => anyhow::bail!("registering the key of {name}: {other:?}"),
        }
        approvers.push(Approver {
            name,
            client: ApiClient::new(api_url, Secret::new(token.expose().to_owned())),
            key,
        });
    }
    Ok(approvers)
}

/// Submits `intent` through the HTTP API as the demo's agent; it must be accepted.
pub async fn post_intent(store: &Store, api_url: &str, intent: &DemoIntent) -> anyhow::Result<()> {
    let tenant = intent.intent.snapshot.tenant_id.clone();
    let (token, _, _) =
        crate::token::issue(store, AGENT, Role::Agent, std::slice::from_ref(&tenant)).await?;
    let response = reqwest::Client::new()
        .post(format!("{api_url}/v1/intents"))
        .bearer_auth(token.expose())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(intent.bytes.clone())
        .send()
        .await
        .context("submitting an intent to the HTTP API")?;
    let status = response.status();
    anyhow::ensure!(
        status == StatusCode::ACCEPTED,
        "the HTTP API answered {status} to {}: {}",
        intent.intent.operation_id.as_str(),
        response.text().await.unwrap_or_default()
    );
    Ok(())
}

pub async fn submit(store: &Store, api_url: &str, intent: &DemoIntent) -> anyhow::Result<()> {
    let tenant = intent.intent.snapshot.tenant_id.clone();
    post_intent(store, api_url, intent).await?;
    let status = StatusCode::ACCEPTED;
    let op = intent.intent.operation_id.as_str();
    println!("submitted the seed example {op} through the HTTP API as {AGENT}: {status}");
    println!("the HTTP API is at {api_url} while the demo runs (OpenAPI: {api_url}/openapi.json); with a token of your own");
    println!("  (fleetctl token create --principal you --role agent --tenant {tenant}):");
    println!("  curl -H \"Authorization: Bearer $TOKEN\" \"{api_url}/v1/operations/{op}?wait_for=final&timeout_s=30\"");
    Ok(())
}

/// Submits the seed example again with its payee's id spelled with a Cyrillic `е`
/// (U+0435) for the Latin `e`: an id that reads like the genuine one. The API refuses it
/// (`invalid_field`, `payload.beneficiary_id`), as the queue and MCP would.
pub async fn refuse_lookalike(
    store: &Store,
    api_url: &str,
    seed: &DemoIntent,
) -> anyhow::Result<()> {
    let mut spoofed: serde_json::Value = serde_json::from_slice(&seed.bytes)?;
    let genuine = spoofed["payload"]["beneficiary_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let lookalike = genuine.replacen('e', "\u{435}", 1);
    spoofed["payload"]["beneficiary_id"] = serde_json::json!(lookalike);
    spoofed["operation_id"] = serde_json::json!(format!("op_{}", ulid::Ulid::new()));
    let tenant = seed.intent.snapshot.tenant_id.clone();
    let (token, _, _) =
        crate::token::issue(store, AGENT, Role::Agent, std::slice::from_ref(&tenant)).await?;
    let response = reqwest::Client::new()
        .post(format!("{api_url}/v1/intents"))
        .bearer_auth(token.expose())
        .json(&spoofed)
        .send()
        .await
        .context("submitting a look-alike payee id to the HTTP API")?;
    let status = response.status();
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    anyhow::ensure!(
        status == StatusCode::UNPROCESSABLE_ENTITY
            && body["error"]["field"] == "payload.beneficiary_id",
        "the HTTP API answered {status} {body} to a look-alike payee id"
    );
    println!(
        "refused a look-alike payee id ({lookalike}, a Cyrillic U+0435 for the e of {genuine}): {status} {} {}",
        body["error"]["code"].as_str().unwrap_or_default(),
        body["error"]["field"].as_str().unwrap_or_default()
    );
    Ok(())
}
