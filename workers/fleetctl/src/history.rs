//! `fleetctl history OP`: an operation's story as the API tells it to the caller's token
//! (`GET /v1/operations/{id}/history`), every page of it, oldest first. `-o json` prints
//! the entries as one page (`{"data": [...], "next_cursor": null}`), as the API documents
//! an entry; the table is the same entries in words.

use serde_json::{json, Value};

use crate::api_client::ApiClient;
use crate::args::Format;
use crate::table::Table;

/// A bound on pages read, far past any operation's history (a page holds 50 entries):
/// a cursor that never ends is an API fault, not a reason to loop for ever.
const MAX_PAGES: usize = 1_000;

pub async fn show(client: &ApiClient, op: &str, format: Format) -> anyhow::Result<()> {
    let entries = all_entries(client, op).await?;
    match format {
        Format::Json => println!("{}", json!({"data": entries, "next_cursor": null})),
        Format::Table => {
            for line in table_lines(&entries) {
                say!("{line}");
            }
        }
    }
    Ok(())
}

async fn all_entries(client: &ApiClient, op: &str) -> anyhow::Result<Vec<Value>> {
    let mut entries = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let page = client.history_page(op, cursor.as_deref()).await?;
        if let Some(data) = page.json["data"].as_array() {
            entries.extend(data.iter().cloned());
        }
        match page.json["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return Ok(entries),
        }
    }
    anyhow::bail!("the history of {op} did not end within {MAX_PAGES} pages")
}

/// A header and one aligned line per entry: when, what, the status change, who, why.
pub fn table_lines(entries: &[Value]) -> Vec<String> {
    let text = |e: &Value, key: &str| e[key].as_str().unwrap_or("").to_owned();
    let rows = entries.iter().map(|e| {
        let change = match (e["from_status"].as_str(), e["to_status"].as_str()) {
            (Some(from), Some(to)) => format!("{from} → {to}"),
            (None, Some(to)) => format!("→ {to}"),
            _ => String::new(),
        };
        let reason = match e["reason"].as_str() {
            Some(r) => fleet_core::wording::reason_name_in_words(r),
            None => String::new(),
        };
        [
            text(e, "at"),
            text(e, "kind"),
            change,
            text(e, "actor"),
            reason,
        ]
    });
    Table::with_rows(&["AT", "WHAT", "STATUS", "BY", "WHY"], rows).lines()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_line_up_under_the_header() {
        let lines = table_lines(&[
            json!({"seq": 1, "kind": "prepared", "from_status": null, "to_status": "not_started",
                   "actor": "worker-a", "reason": null, "at": "2026-01-01T00:00:00Z"}),
            json!({"seq": 7, "kind": "transition", "from_status": "not_started",
                   "to_status": "in_progress", "actor": "worker-b", "reason": null,
                   "at": "2026-01-01T00:00:01Z"}),
        ]);
        assert_eq!(lines.len(), 3);
        // In characters: the arrow is one character of three bytes.
        let column = |line: &str| {
            let at = line.find("worker").or(line.find("BY"))?;
            Some(line[..at].chars().count())
        };
        assert_eq!(column(&lines[0]), column(&lines[1]));
        assert_eq!(column(&lines[1]), column(&lines[2]));
        assert!(lines[2].contains("not_started → in_progress"), "{lines:?}");
    }
}
