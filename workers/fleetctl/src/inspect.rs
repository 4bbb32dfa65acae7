//! `show` and `list`: operations as the API shows them to the caller's token. `-o json`
//! prints the API's answer as it came (a view, or a page `{"data", "next_cursor"}`), so
//! scripts read the documented `OperationView`; the table is the same view in words.

use anyhow::Context;
use chrono::{DateTime, Utc};
use fleet_core::payee::PayeeEvidence;
use fleet_core::wording::reason_name_in_words;
use fleet_core::OperationView;

use crate::api_client::{Answer, ApiClient, ListQuery};
use crate::args::Format;
use crate::format::{age, amount};

pub async fn show(client: &ApiClient, op: &str, format: Format) -> anyhow::Result<()> {
    let answer = client.operation_answer(op).await?;
    print_view(&answer, format)
}

/// Prints one view: as it came, or in words (an answer that is no view is an error).
pub fn print_view(answer: &Answer, format: Format) -> anyhow::Result<()> {
    match format {
        Format::Json => println!("{}", answer.body),
        Format::Table => {
            for line in view_lines(&answer.view()?) {
                say!("{line}");
            }
        }
    }
    Ok(())
}

pub async fn list(client: &ApiClient, query: &ListQuery, format: Format) -> anyhow::Result<()> {
    let page = client.list(query).await?;
    if format == Format::Json {
        println!("{}", page.body);
        return Ok(());
    }
    let rows: Vec<OperationView> = page.json["data"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|v| OperationView::from_json(v.clone()))
        .collect::<Result<_, _>>()
        .context("the API listed something that is not an operation view")?;
    for line in table_lines(&rows, Utc::now()) {
        say!("{line}");
    }
    // On stderr: the table on stdout stays rows only, for `| grep`, `| wc -l`.
    if let Some(cursor) = page.json["next_cursor"].as_str() {
        eprintln!(
            "{}",
            fleet_core::visible::reveal(&format!(
                "more: the next page is `fleetctl list --cursor {cursor}` (with the same filters)"
            ))
        );
    }
    Ok(())
}

fn or_dash(value: &Option<String>) -> &str {
    value.as_deref().unwrap_or("-")
}

/// One operation's view, line by line, for people.
pub fn view_lines(v: &OperationView) -> Vec<String> {
    let mut lines = vec![format!(
        "operation   {}  ({} via {}, tenant {})",
        v.operation_id, v.action, v.provider, v.tenant_id
    )];
    let reason = v
        .reason
        .as_deref()
        .map(|r| format!(": {}", reason_name_in_words(r)))
        .unwrap_or_default();
    lines.push(format!("status      {}{reason}", v.status));
    let decided = match (&v.decided_by, v.decided_at) {
        (Some(by), Some(at)) => format!(", decided by {by} at {at}"),
        (Some(by), None) => format!(", decided by {by}"),
        _ => String::new(),
    };
    lines.push(format!(
        "approval    {} ({} of {} approvals) until {}{decided}",
        v.approval_status, v.approvals_received, v.approvals_required, v.approval_expires_at,
    ));
    lines.push(format!(
        "submitted   by {} at {}",
        v.submitted_by.as_deref().unwrap_or("the queue"),
        v.created_at
    ));
    if let Some(amount) = amount(&v.payload) {
        lines.push(format!("amount      {amount}"));
    }
    if let Some(payee) = v.payee.as_ref().map(payee) {
        lines.push(format!("payee       {payee}"));
    }
    if let Some(cues) = v.risk.as_ref().filter(|c| !c.is_empty()) {
        let cues: Vec<String> = cues
            .iter()
            // A cue's code, as the view writes it (`{"cue": <code>, …}`).
            .map(|c| {
                serde_json::to_value(c)
                    .ok()
                    .and_then(|v| v["cue"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| "?".to_owned())
            })
            .collect();
        lines.push(format!("risk        {}", cues.join(", ")));
    }
    let supersedes = v.supersedes.as_ref().map(|s| s.to_string());
    for (key, value) in [
        ("target", &v.target),
        ("supersedes", &supersedes),
        ("external_id", &v.external_id),
        ("error_code", &v.error_code),
    ] {
        if let Some(value) = value {
            lines.push(format!("{key:<11} {value}"));
        }
    }
    if v.escalated {
        let at = v.escalated_at.map(|t| t.to_string());
        lines.push(format!(
            "escalated   at {}: an operator settles it",
            or_dash(&at)
        ));
    }
    lines.push(format!("hash        {}", v.payload_hash));
    lines.push(format!(
        "policy      {}  data version {}",
        v.policy_version, v.data_version
    ));
    lines.push(format!("payload     {}", v.payload));
    lines
}

/// The payee evidence in words: who, the masked account, the directory's version.
fn payee(p: &PayeeEvidence) -> String {
    match p {
        PayeeEvidence::Found { payee, .. } => format!(
            "{} ({}), account {}, version {}{}",
            payee.name,
            payee.id,
            payee.account.masked,
            payee.version,
            if payee.verified {
                ", verified"
            } else {
                ", not verified"
            }
        ),
        PayeeEvidence::Unknown { id, reason, .. } => {
            format!("{id} (unknown: {})", reason.as_str())
        }
    }
}

/// The listing's table: a header, then one line per view.
pub fn table_lines(views: &[OperationView], now: DateTime<Utc>) -> Vec<String> {
    let row = |cells: [&str; 10]| {
        format!(
            "{:<30} {:<10} {:<16} {:<12} {:<26} {:>22} {:<10} {:<9} {:>5} {}",
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            cells[4],
            cells[5],
            cells[6],
            cells[7],
            cells[8],
            cells[9]
        )
    };
    let mut lines = vec![row([
        "OPERATION",
        "TENANT",
        "ACTION",
        "STATUS",
        "REASON",
        "AMOUNT",
        "APPROVAL",
        "ESCALATED",
        "AGE",
        "EXTERNAL_ID",
    ])];
    for v in views {
        let amount = amount(&v.payload).unwrap_or_else(|| "-".into());
        let age = age(v.created_at.at(), now);
        lines.push(row([
            v.operation_id.as_str(),
            &v.tenant_id,
            &v.action,
            v.status.as_str(),
            or_dash(&v.reason),
            &amount,
            v.approval_status.as_str(),
            if v.escalated { "yes" } else { "-" },
            &age,
            or_dash(&v.external_id),
        ]));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn view() -> OperationView {
        OperationView::from_json(json!({
            "operation_id": "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8", "tenant_id": "org_482",
            "action": "payment.create", "provider": "payments", "target": null, "supersedes": null,
            "payload": {"invoice_id": "inv_9182", "beneficiary_id": "vendor_77", "amount_minor": 1250000, "currency": "KZT"},
            "payload_hash": format!("sha256:{}", "ab".repeat(32)), "policy_version": "payments-v3", "data_version": "inv_9182@1",
            "payee": {"status": "found", "id": "vendor_77", "name": "Vendor 77 LLP", "country": "KZ",
                      "account": {"scheme": "iban", "masked": "KZ•• 4711", "fingerprint": format!("sha256:{}", "cd".repeat(32))},
                      "verified": true, "version": 1, "looked_up_at": "2026-12-01T08:59:00Z"},
            "risk": [{"cue": "first_payment_to_payee"}],
            "status": "unknown", "reason": "lookup_failed_repeatedly", "error_code": null, "external_id": null,
            "confirmation": null,
            "escalated": true, "escalated_at": "2026-12-01T12:00:00.000000Z",
            "approval_status": "approved", "approval_expires_at": "2026-12-01T13:00:00.000000Z",
            "approvals_required": 1, "approvals_received": 1, "decided_by": "alice", "decided_at": "2026-12-01T11:00:00.000000Z",
            "submitted_by": "billing-bot", "created_at": "2026-12-01T09:00:00.000000Z",
            "updated_at": "2026-12-01T12:00:00.000000Z", "unknown_since": "2026-12-01T11:30:00.000000Z",
            "resolved_at": null,
        }))
        .unwrap()
    }

    #[test]
    fn a_view_in_words_has_the_hash_amount_approval_and_escalation() {
        let lines = view_lines(&view());
        let has = |prefix: &str, part: &str| {
            lines
                .iter()
                .any(|l| l.starts_with(prefix) && l.contains(part))
        };
        assert!(has("hash", "sha256:abab"), "{lines:#?}");
        assert!(has("amount", "12,500.00 KZT"));
        assert!(has(
            "status",
            "unknown: lookups kept failing (lookup_failed_repeatedly)"
        ));
        assert!(has("approval", "approved (1 of 1 approvals)") && has("approval", "by alice"));
        assert!(has(
            "payee",
            "Vendor 77 LLP (vendor_77), account KZ•• 4711, version 1, verified"
        ));
        assert!(has("risk", "first_payment_to_payee"));
        assert!(has("escalated", "2026-12-01T12:00:00.000000Z"));
        assert!(has("submitted", "billing-bot"));
        assert!(
            !lines.iter().any(|l| l.starts_with("target")),
            "null members are left out"
        );
    }

    #[test]
    fn the_table_has_a_header_and_a_row_per_view_with_amount_and_age() {
        let now = DateTime::parse_from_rfc3339("2026-12-01T12:00:00Z")
            .unwrap()
            .to_utc();
        let lines = table_lines(&[view()], now);
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("OPERATION") && lines[0].contains("AMOUNT"));
        let cells: Vec<&str> = lines[1].split_whitespace().collect();
        assert!(
            cells.windows(2).any(|w| w == ["12,500.00", "KZT"]),
            "{cells:?}"
        );
        for cell in [
            "org_482",
            "lookup_failed_repeatedly",
            "yes",
            "3h",
            "approved",
        ] {
            assert!(cells.contains(&cell), "{cell} in {cells:?}");
        }
    }
}
