//! The demo's agent and approvers: the agent submits the seed example through the HTTP
//! API with a token of its own, and two approvers decide through the same API with
//! tokens of theirs, as people would; the demo prints where the API is and how to call it.

use anyhow::Context;
use fleet_core::Role;
use fleet_runtime::Secret;
use fleet_store::Store;
use reqwest::StatusCode;

use super::intents::DemoIntent;
use crate::decide::DecisionClient;

const AGENT: &str = "demo-agent";
/// Two people, so that a payment whose quorum policy asks for two distinct approvers can
/// be approved.
pub const APPROVERS: [&str; 2] = ["demo-approver", "demo-approver-2"];

/// A decision client for each demo approver, with a fresh token granted `tenant`.
pub async fn approvers(
    store: &Store,
    api_url: &str,
    tenant: &str,
) -> anyhow::Result<Vec<(&'static str, DecisionClient)>> {
    let mut clients = Vec::new();
    for name in APPROVERS {
        let (token, _, _) =
            crate::token::issue(store, name, Role::Approver, &[tenant.to_owned()]).await?;
        clients.push((
            name,
            DecisionClient::new(api_url, Secret::new(token.expose().to_owned())),
        ));
    }
    Ok(clients)
}

pub async fn submit(store: &Store, api_url: &str, intent: &DemoIntent) -> anyhow::Result<()> {
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
        .context("submitting the seed example to the HTTP API")?;
    let status = response.status();
    anyhow::ensure!(
        status == StatusCode::ACCEPTED,
        "the HTTP API answered {status} to the seed example: {}",
        response.text().await.unwrap_or_default()
    );
    let op = intent.intent.operation_id.as_str();
    println!("submitted the seed example {op} through the HTTP API as {AGENT}: {status}");
    println!("the HTTP API is at {api_url} while the demo runs (OpenAPI: {api_url}/openapi.json); with a token of your own");
    println!("  (fleetctl token create --principal you --role agent --tenant {tenant}):");
    println!("  curl -H \"Authorization: Bearer $TOKEN\" \"{api_url}/v1/operations/{op}?wait_for=final&timeout_s=30\"");
    Ok(())
}
