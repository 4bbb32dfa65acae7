//! `GET /v1/operations/{id}/history` and `fleetctl history` through the real `fleet-api`
//! and `fleet-execute` processes: an agent reads its paid operation's story in order (the
//! rows the database holds, no more, no fewer), every page size returns every entry once,
//! `fleetctl history` prints the same entries (`-o json`) or a table, and another tenant's
//! principal gets the 404 of an id that does not exist. The OpenAPI document describes the
//! route and an entry's keys exactly.

use std::collections::HashSet;

use fleet_core::{Role, Status};
use fleet_tests::{hash_of, intent, op_of, ApiProcess, TestFleet};
use reqwest::StatusCode;
use serde_json::Value;

const TENANT: &str = "org_482";

/// Every entry, following `next_cursor` with pages of `limit`, and the pages read.
async fn read_all(
    fleet: &TestFleet,
    api: &ApiProcess,
    token: &str,
    op: &str,
    limit: usize,
) -> (Vec<Value>, usize) {
    let mut entries = Vec::new();
    let mut cursor: Option<String> = None;
    for pages in 1..=200 {
        let path = match &cursor {
            Some(c) => format!("/v1/operations/{op}/history?limit={limit}&cursor={c}"),
            None => format!("/v1/operations/{op}/history?limit={limit}"),
        };
        let (status, page) = api.get(&fleet.http, token, &path).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let data = page["data"].as_array().expect("data").clone();
        assert!(data.len() <= limit, "{page}");
        entries.extend(data);
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return (entries, pages),
        }
    }
    panic!("the history of {op} did not end within 200 pages");
}

#[tokio::test]
async fn an_agent_reads_its_operations_story_in_order_and_once_per_page() {
    let fleet = TestFleet::start().await;
    let api = fleet.spawn_api(&[]).await;
    let _execute = fleet.spawn_process("fleet-execute", &[]);
    let agent = fleet.token("billing-bot", Role::Agent, &[TENANT]).await;
    let stranger = fleet.token("other-bot", Role::Agent, &["org_999"]).await;
    let i = intent();
    let op = op_of(&i);
    api.submitted(&fleet.http, &agent, &i).await;
    assert!(fleet.approve(&op, &hash_of(&i)).await.expect("approved"));
    fleet.reaches(&op, Status::Succeeded).await;

    // In order, as the database holds it: prepared first, succeeded last.
    let (entries, _) = read_all(&fleet, &api, &agent, &op, 50).await;
    let rows = fleet.history(&op).await;
    let seqs: Vec<i64> = entries.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, rows.iter().map(|r| r.id).collect::<Vec<_>>());
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"prepared"), "{entries:?}");
    assert!(kinds.contains(&"approved"), "{entries:?}");
    let last = entries.last().unwrap();
    assert_eq!(last["to_status"], "succeeded", "{entries:?}");
    assert_eq!(last["actor"], "execute", "{entries:?}");
    for (entry, row) in entries.iter().zip(&rows) {
        assert_eq!(entry["actor"], row.actor.as_str());
        assert_eq!(
            entry["to_status"].as_str(),
            row.to_status.map(|s| s.as_str())
        );
        // Typed, and nothing more: the rows' evidence stays out.
        let mut keys: Vec<&str> = entry
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "actor",
                "at",
                "from_status",
                "kind",
                "reason",
                "seq",
                "to_status"
            ]
        );
    }
    assert!(entries.len() >= 4, "{entries:?}");
    // The OpenAPI document describes the route and exactly these keys.
    let doc = fleet.get_json(&api.url("/openapi.json")).await;
    let route = &doc["paths"]["/v1/operations/{id}/history"]["get"];
    assert_eq!(
        route["security"],
        serde_json::json!([{"bearer": []}]),
        "{route}"
    );
    let documented: Vec<&String> = doc["components"]["schemas"]["HistoryEntry"]["properties"]
        .as_object()
        .expect("HistoryEntry in the document")
        .keys()
        .collect();
    let real: Vec<&String> = entries[0].as_object().unwrap().keys().collect();
    let (mut documented, mut real) = (documented, real);
    documented.sort();
    real.sort();
    assert_eq!(documented, real);

    // Every page size returns every entry once, in the same order.
    for limit in [1, 2, 3] {
        let (paged, pages) = read_all(&fleet, &api, &agent, &op, limit).await;
        assert_eq!(paged, entries, "limit {limit}");
        assert_eq!(pages, entries.len().div_ceil(limit), "limit {limit}");
        let unique: HashSet<i64> = paged.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
        assert_eq!(unique.len(), paged.len());
    }

    // Another tenant's principal: the same 404 as an id that does not exist.
    let (status, problem) = api
        .get(
            &fleet.http,
            &stranger,
            &format!("/v1/operations/{op}/history"),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{problem}");
    let free = op_of(&intent());
    let (free_status, free_problem) = api
        .get(
            &fleet.http,
            &agent,
            &format!("/v1/operations/{free}/history"),
        )
        .await;
    assert_eq!(free_status, StatusCode::NOT_FOUND);
    assert_eq!(problem["code"], free_problem["code"]);
    // A cursor the API did not hand out, and a page size out of bounds.
    for query in ["cursor=garbage", "limit=0", "limit=101", "colour=red"] {
        let (status, problem) = api
            .get(
                &fleet.http,
                &agent,
                &format!("/v1/operations/{op}/history?{query}"),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {problem}");
    }

    // fleetctl history: the same entries as one page, or a table with one line each.
    let out = api
        .fleetctl_as(&agent, &[], &["history", &op, "-o", "json"])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["data"].as_array().unwrap(), &entries);
    assert!(printed["next_cursor"].is_null());
    let out = api.fleetctl_as(&agent, &[], &["history", &op]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), entries.len() + 1, "{table}");
    assert!(lines[0].starts_with("AT"), "{table}");
    assert!(lines.last().unwrap().contains("→ succeeded"), "{table}");
    let out = api.fleetctl_as(&stranger, &[], &["history", &op]).await;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not_found"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    fleet.stop().await;
}
