//! `fleetctl approve --batch op_…,op_… --key PATH`: several operations approved in one
//! decision. The operations are fetched through the API, the `fleet.approval_batch.v1`
//! statement is built here from what was fetched (their hashes, their count, their sum per
//! currency), shown with each operation's payee and amount, signed once on this machine,
//! and sent to `POST /v1/approvals/batch`.

use anyhow::Context;
use chrono::{Duration, Utc};
use fleet_core::batch_approval::{BatchItem, BatchStatement};
use fleet_core::ApproverKey;
use serde_json::json;

use crate::api_client::ApiClient;
use crate::args::Format;
use crate::output;

/// How long the signed statement stays valid: long enough to send it, no longer.
const VALID_FOR_MINUTES: i64 = 10;

pub async fn approve_batch(
    client: &ApiClient,
    ops: &[String],
    key: &ApproverKey,
    format: Format,
) -> anyhow::Result<()> {
    let mut items = Vec::new();
    let mut tenant: Option<String> = None;
    for op in ops {
        let view = client.operation(op).await?;
        let t = view.tenant_id.as_str();
        anyhow::ensure!(
            tenant.as_deref().is_none_or(|x| x == t),
            "{op} is of tenant {t}: a batch is of one tenant"
        );
        tenant = Some(t.to_owned());
        let payload = &view.payload;
        let amount = payload["amount_minor"]
            .as_i64()
            .zip(payload["currency"].as_str().map(str::to_owned));
        output::note(
            format,
            &format!(
                "  {op}: {} to {} ({})",
                view.action,
                payload["beneficiary_id"].as_str().unwrap_or("-"),
                amount
                    .as_ref()
                    .and_then(|(m, c)| fleet_core::money::format_amount(*m, c))
                    .unwrap_or_else(|| "no amount".to_owned()),
            ),
        );
        items.push(BatchItem {
            operation_id: op.clone(),
            payload_hash: view.payload_hash.to_string(),
            amount,
        });
    }
    let batch = BatchStatement::new(
        format!("ab_{}", ulid::Ulid::new()),
        tenant.context("no operation named")?,
        items,
        Utc::now() + Duration::minutes(VALID_FOR_MINUTES),
    )
    .context("a batch lists 1 to 500 operations")?;
    output::note(
        format,
        &format!(
            "signing, as key {}: {}",
            key.public_key().key_id(),
            batch.to_words()
        ),
    );
    let body = json!({
        "statement": batch.to_json(),
        "key_id": key.public_key().key_id().as_str(),
        "signature": key.sign(&batch.to_bytes()).to_text(),
    });
    let answer = client
        .post_path("/v1/approvals/batch", &body, "approving the batch")
        .await?;
    let listed = answer.json["operations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let approved = listed
        .iter()
        .filter(|o| o["approval_status"] == "approved")
        .count();
    output::result(
        format,
        || answer.json.clone(),
        || {
            format!(
                "batch {} recorded: {} operations, {approved} approved and starting",
                batch.batch_id,
                listed.len()
            )
        },
    );
    Ok(())
}
