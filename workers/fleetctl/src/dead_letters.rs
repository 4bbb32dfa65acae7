//! `fleetctl dead-letters list | show | replay | discard`: the dead letters fleet-relay
//! keeps in Postgres, through the API as the operator of the token (`/v1/dead-letters`).
//! `-o json` prints the API's answer as it came; the table is the same in words.

use clap::Subcommand;
use serde_json::{json, Value};

use crate::api_client::ApiClient;
use crate::api_target::ApiArgs;
use crate::args::Format;
use crate::table::Table;

/// A bound on pages read (a page holds 50): a cursor that never ends is an API fault.
const MAX_PAGES: usize = 1_000;

#[derive(Subcommand, Debug)]
pub enum DeadLetterCommand {
    /// The dead letters nobody replayed or discarded yet, oldest first, with their reasons.
    List {
        /// Only this work queue's (intents.prepare, operations.execute, …).
        #[arg(long)]
        queue: Option<String>,
        /// Only those with this reason (malformed, payee_directory_unreachable, …).
        #[arg(long)]
        reason: Option<String>,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// One dead letter: its body, headers, reason, and every replay and discard of it.
    Show {
        /// The dead letter's id (from `list`).
        id: i64,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Put it back through the same validation: an intent is submitted again as the
    /// principal its broker user speaks for, a doorbell rung again.
    Replay {
        /// The dead letter's id (from `list`).
        id: i64,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Set it aside, with a reason (recorded).
    Discard {
        /// The dead letter's id (from `list`).
        id: i64,
        /// Why it is set aside (recorded with your name).
        #[arg(long)]
        reason: String,
        #[command(flatten)]
        api: ApiArgs,
    },
}

pub async fn run(command: DeadLetterCommand, format: Format) -> anyhow::Result<()> {
    match command {
        DeadLetterCommand::List { queue, reason, api } => {
            let client = ApiClient::from_args(&api)?;
            let all = list_all(&client, queue.as_deref(), reason.as_deref()).await?;
            match format {
                Format::Json => println!("{}", json!({"data": all, "next_cursor": null})),
                Format::Table => {
                    for line in table_lines(&all) {
                        crate::say!("{line}");
                    }
                }
            }
        }
        DeadLetterCommand::Show { id, api } => {
            let client = ApiClient::from_args(&api)?;
            let answer = client
                .get_path(&format!("/v1/dead-letters/{id}"), "showing the dead letter")
                .await?;
            match format {
                Format::Json => println!("{}", answer.body),
                Format::Table => {
                    for line in table_lines(std::slice::from_ref(&answer.json)) {
                        crate::say!("{line}");
                    }
                    let body = &answer.json["body"];
                    if !body.is_null() {
                        crate::say!("body: {body}");
                    }
                    for a in answer.json["actions"].as_array().into_iter().flatten() {
                        crate::say!(
                            "{} {} by {}: {} {}",
                            text(a, "at"),
                            text(a, "action"),
                            text(a, "actor"),
                            text(a, "outcome"),
                            text(a, "reason")
                        );
                    }
                }
            }
        }
        DeadLetterCommand::Replay { id, api } => {
            let client = ApiClient::from_args(&api)?;
            let answer = client
                .post_path(
                    &format!("/v1/dead-letters/{id}/replay"),
                    &json!({}),
                    "replaying the dead letter",
                )
                .await?;
            match format {
                Format::Json => println!("{}", answer.body),
                Format::Table => {
                    let outcome = text(&answer.json, "outcome");
                    match answer.json["reason"].as_str() {
                        Some(r) => crate::say!("dead letter {id}: {outcome} ({r})"),
                        None => crate::say!("dead letter {id}: {outcome}"),
                    }
                }
            }
        }
        DeadLetterCommand::Discard { id, reason, api } => {
            let client = ApiClient::from_args(&api)?;
            let answer = client
                .post_path(
                    &format!("/v1/dead-letters/{id}/discard"),
                    &json!({"reason": reason}),
                    "discarding the dead letter",
                )
                .await?;
            match format {
                Format::Json => println!("{}", answer.body),
                Format::Table => crate::say!("dead letter {id}: discarded"),
            }
        }
    }
    Ok(())
}

async fn list_all(
    client: &ApiClient,
    queue: Option<&str>,
    reason: Option<&str>,
) -> anyhow::Result<Vec<Value>> {
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut query: Vec<String> = Vec::new();
        let pairs = [
            ("queue", queue),
            ("reason", reason),
            ("cursor", cursor.as_deref()),
        ];
        for (key, value) in pairs {
            if let Some(v) = value {
                // Queue names, reasons and cursors are [a-z0-9._]: nothing to escape.
                query.push(format!("{key}={v}"));
            }
        }
        let path = match query.is_empty() {
            true => "/v1/dead-letters".to_owned(),
            false => format!("/v1/dead-letters?{}", query.join("&")),
        };
        let page = client.get_path(&path, "listing dead letters").await?;
        all.extend(page.json["data"].as_array().into_iter().flatten().cloned());
        match page.json["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return Ok(all),
        }
    }
    anyhow::bail!("the dead letters did not end within {MAX_PAGES} pages")
}

fn text(v: &Value, key: &str) -> String {
    match &v[key] {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A header and one aligned line per dead letter: id, queue, tenant, when kept, why.
pub fn table_lines(letters: &[Value]) -> Vec<String> {
    let rows = letters.iter().map(|d| {
        [
            text(d, "id"),
            text(d, "queue"),
            text(d, "tenant_id"),
            text(d, "kept_at"),
            text(d, "reason"),
        ]
    });
    Table::with_rows(&["ID", "QUEUE", "TENANT", "KEPT", "REASON"], rows).lines()
}
