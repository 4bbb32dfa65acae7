//! `show` and `list`. With `--json`, an operation is an object keyed by the column names
//! of the operations table, with its `attempts` and `events` as arrays: scripts and
//! dashboards read these names, so they are the columns' own.

use chrono::Utc;
use fleet_core::{AttemptOutcome, OpKey, OpRef, OperationId, Status};
use fleet_store::{OperationRow, Store};
use serde_json::Value;

use crate::cli::Format;
use crate::format::{age, amount};

pub async fn operation_json(store: &Store, row: &OperationRow) -> anyhow::Result<Value> {
    let mut v = serde_json::to_value(row)?;
    v["attempts"] = serde_json::to_value(store.attempts(row.key()).await?)?;
    v["events"] = serde_json::to_value(store.events(row.key()).await?)?;
    Ok(v)
}

/// The operation `id` names (of `tenant`, when given). Ids are unique per tenant
/// (docs/design.md#tenant-boundaries): an id two tenants hold needs `--tenant`.
pub async fn pick(store: &Store, id: &str, tenant: Option<&str>) -> anyhow::Result<OpKey> {
    OperationId::parse(id).map_err(anyhow::Error::msg)?;
    let holders: Vec<String> = store
        .tenants_of(id)
        .await?
        .into_iter()
        .filter(|t| tenant.is_none_or(|asked| asked == t))
        .collect();
    match holders.as_slice() {
        [] => anyhow::bail!("no operation {id}"),
        [one] => Ok(OpKey::new(one.as_str(), id)),
        several => anyhow::bail!(
            "{id} names operations of tenants {}: say which with --tenant",
            several.join(", ")
        ),
    }
}

pub async fn show(store: &Store, key: OpRef<'_>, format: Format) -> anyhow::Result<()> {
    let op = key.operation_id;
    let Some(row) = store.get(key).await? else {
        anyhow::bail!("no operation {op}");
    };
    if format == Format::Json {
        println!(
            "{}",
            serde_json::to_string_pretty(&operation_json(store, &row).await?)?
        );
        return Ok(());
    }
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    say!(
        "operation   {}  ({} via {}, tenant {})",
        row.operation_id,
        row.action,
        row.provider,
        row.tenant_id
    );
    say!(
        "status      {}{}",
        row.status,
        row.status_reason
            .as_ref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default()
    );
    say!(
        "approval    {} until {} by {}",
        row.approval_status,
        row.approval_expires_at,
        opt(&row.decided_by)
    );
    if let Some(amount) = amount(&row.payload) {
        say!("amount      {amount}");
    }
    say!("hash        {}", row.payload_hash);
    say!("payload     {}", row.payload);
    say!(
        "fence       {}  attempts {}  external_id {}",
        row.fence,
        row.attempts,
        opt(&row.external_id)
    );
    if let Some(at) = row.escalated_at {
        say!("escalated   {at}");
    }
    say!("attempts:");
    for a in store.attempts(key).await? {
        say!(
            "  fence {} by {} at {}: {} http {} {}",
            a.fence,
            a.worker,
            a.started_at,
            a.outcome
                .map_or("(no answer recorded)", AttemptOutcome::as_str),
            a.http_status
                .map(|s| s.to_string())
                .unwrap_or_else(|| "-".into()),
            a.detail.as_deref().unwrap_or("")
        );
    }
    say!("events:");
    for e in store.events(key).await? {
        let moved = match (&e.from_status, &e.to_status) {
            (Some(f), Some(t)) => format!("{f} -> {t}"),
            (None, Some(t)) => format!("-> {t}"),
            _ => String::new(),
        };
        say!(
            "  {} {:<12} {:<28} by {} {}",
            e.at,
            e.kind,
            moved,
            e.actor,
            e.reason.as_deref().unwrap_or("")
        );
    }
    Ok(())
}

pub async fn list(
    store: &Store,
    status: Option<Status>,
    escalated: bool,
    limit: i64,
    format: Format,
) -> anyhow::Result<()> {
    let rows = store
        .list(status, escalated, limit.clamp(1, 10_000))
        .await?;
    if format == Format::Json {
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            out.push(operation_json(store, row).await?);
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let now = Utc::now();
    say!(
        "{:<30} {:<16} {:<12} {:<26} {:>22} {:<10} {:<9} {:>5} EXTERNAL_ID",
        "OPERATION",
        "ACTION",
        "STATUS",
        "REASON",
        "AMOUNT",
        "APPROVAL",
        "ESCALATED",
        "AGE"
    );
    for r in rows {
        say!(
            "{:<30} {:<16} {:<12} {:<26} {:>22} {:<10} {:<9} {:>5} {}",
            r.operation_id,
            r.action,
            // By name: a column's width pads text, not a value's `Display`.
            r.status.as_str(),
            r.status_reason.as_deref().unwrap_or("-"),
            amount(&r.payload).unwrap_or_else(|| "-".into()),
            r.approval_status.as_str(),
            if r.escalated_at.is_some() { "yes" } else { "-" },
            age(r.created_at, now),
            r.external_id.as_deref().unwrap_or("-"),
        );
    }
    Ok(())
}
