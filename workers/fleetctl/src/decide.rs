//! `fleetctl approve | reject | resolve | dispute`: a person's decisions go through the
//! HTTP API as the principal whose token is `FLEET_TOKEN`, so they are authorized (role,
//! tenant, maker-checker), counted towards a quorum and recorded exactly as any other
//! door's. fleetctl never writes a decision to Postgres itself.

use anyhow::Context;
use clap::Args;
use fleet_runtime::Secret;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// Where fleet-api is and who is calling.
#[derive(Args, Debug, Clone)]
pub struct ApiConnection {
    /// Base URL of fleet-api.
    #[arg(long, env = "FLEET_API_URL", default_value = "http://127.0.0.1:8080")]
    pub api_url: String,
    /// The bearer token of the principal deciding (`fleetctl token create`). Prefer the
    /// environment variable: a flag shows in the process list.
    #[arg(long, env = "FLEET_TOKEN", hide_env_values = true)]
    pub token: Secret<String>,
}

/// A client of the decision routes.
pub struct DecisionClient {
    http: reqwest::Client,
    api_url: String,
    token: Secret<String>,
}

impl DecisionClient {
    pub fn new(api_url: &str, token: Secret<String>) -> DecisionClient {
        DecisionClient {
            http: reqwest::Client::new(),
            api_url: api_url.trim_end_matches('/').to_owned(),
            token,
        }
    }

    pub fn from_args(conn: &ApiConnection) -> DecisionClient {
        DecisionClient::new(&conn.api_url, conn.token.clone())
    }

    /// POSTs `body` to `/v1/operations/{op}/{decision}` and returns the operation's view,
    /// or the API's refusal in words.
    pub async fn decide(&self, op: &str, decision: &str, body: Value) -> anyhow::Result<Value> {
        let url = format!("{}/v1/operations/{op}/{decision}", self.api_url);
        let response = self
            .http
            .post(&url)
            .bearer_auth(self.token.expose())
            .json(&body)
            .send()
            .await
            .with_context(|| format!("calling the API at {}", self.api_url))?;
        let status = response.status();
        let answer: Value = response.json().await.unwrap_or(Value::Null);
        if status == StatusCode::OK {
            return Ok(answer);
        }
        let code = answer["error"]["code"].as_str().unwrap_or("");
        let field = answer["error"]["field"].as_str();
        anyhow::bail!(
            "{decision} {op} refused ({} {code}): {}",
            status.as_u16(),
            explain(code, field)
        )
    }
}

/// What a refusal means for the person who typed the command.
fn explain(code: &str, field: Option<&str>) -> String {
    match code {
        "unauthorized" => "FLEET_TOKEN is missing, unknown or revoked".to_owned(),
        "role_not_allowed" => "your principal's role may not do this (approvers approve and reject, operators resolve and dispute)".to_owned(),
        "submitter_cannot_approve" => "your principal submitted this operation; someone else must approve it".to_owned(),
        "not_found" => "no such operation among your tenants".to_owned(),
        "hash_mismatch" => "the hash is not the stored snapshot's (whatever you approved before); look at `fleetctl show` again".to_owned(),
        "approval_expired" => "the approval window has closed; the agent must submit a new intent".to_owned(),
        "not_pending" => "the operation was rejected or cancelled, or others approved it and it no longer waits for you".to_owned(),
        "already_started" => "execution began or the operation ended; only an operation that has not started can be rejected".to_owned(),
        "not_allowed_in_status" => "the operation's status does not allow this decision (an operator resolves unknown, accepted or disputed operations, or confirms a succeeded one)".to_owned(),
        "changed_meanwhile" => "the operation changed while you decided; look at it again".to_owned(),
        "invalid_field" if field == Some("external_id") => {
            "resolving as succeeded needs --external-id, the provider's id of the effect (one visible token)".to_owned()
        }
        "invalid_field" => format!("{} is missing, blank or too long", field.unwrap_or("a value")),
        "unavailable" => "the API could not reach Postgres; nothing was decided, try again".to_owned(),
        _ => "see the API's documentation (docs/api.md)".to_owned(),
    }
}

fn quorum(view: &Value) -> String {
    format!(
        "{} of {}",
        view["approvals_received"], view["approvals_required"]
    )
}

pub async fn approve(client: &DecisionClient, op: &str, hash: &str) -> anyhow::Result<()> {
    let view = client
        .decide(op, "approve", json!({ "payload_hash": hash }))
        .await?;
    if view["approval_status"] == "approved" {
        println!(
            "approved {op} ({hash}): {} approvals; execution starts",
            quorum(&view)
        );
    } else {
        println!(
            "approval of {op} recorded: {} approvals; waiting for another approver",
            quorum(&view)
        );
    }
    Ok(())
}

pub async fn reject(client: &DecisionClient, op: &str, reason: &str) -> anyhow::Result<()> {
    let view = client
        .decide(op, "reject", json!({ "reason": reason }))
        .await?;
    println!("rejected {op}: {}", view["status"].as_str().unwrap_or("?"));
    Ok(())
}

pub async fn resolve(
    client: &DecisionClient,
    op: &str,
    outcome: &str,
    external_id: Option<&str>,
    evidence: &str,
) -> anyhow::Result<()> {
    let body = json!({ "outcome": outcome, "external_id": external_id, "evidence": evidence });
    let view = client.decide(op, "resolve", body).await?;
    println!("{op} is now {}", view["status"].as_str().unwrap_or("?"));
    Ok(())
}

pub async fn dispute(client: &DecisionClient, op: &str, reason: &str) -> anyhow::Result<()> {
    client
        .decide(op, "dispute", json!({ "reason": reason }))
        .await?;
    println!("{op} is disputed; workers will not move it again");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_the_decision_routes_give_is_explained() {
        for code in [
            "unauthorized",
            "role_not_allowed",
            "submitter_cannot_approve",
            "not_found",
            "hash_mismatch",
            "approval_expired",
            "not_pending",
            "already_started",
            "not_allowed_in_status",
            "changed_meanwhile",
            "invalid_field",
            "unavailable",
        ] {
            assert!(!explain(code, None).contains("documentation"), "{code}");
        }
        assert!(explain("invalid_field", Some("external_id")).contains("--external-id"));
    }
}
