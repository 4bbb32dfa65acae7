//! The intents shown in docs/protocol.md are valid, and the canonical forms and hashes the
//! page prints for them are the ones fleet computes, so the page cannot drift.

use std::path::Path;

use fleet_core::{canonical_json, parse_intent};

fn protocol_page() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/protocol.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The bodies of the page's ```json blocks that are intents.
fn intent_examples(page: &str) -> Vec<String> {
    page.split("```json\n")
        .skip(1)
        .filter_map(|rest| rest.split_once("\n```").map(|(block, _)| block.to_owned()))
        .filter(|block| block.contains("\"schema\": \"intent.v1\""))
        .collect()
}

#[test]
fn every_example_intent_is_valid_and_its_printed_hash_is_ours() {
    let page = protocol_page();
    let examples = intent_examples(&page);
    assert!(examples.len() >= 2, "the page shows at least two intents");
    for example in &examples {
        let intent = parse_intent(example.as_bytes())
            .unwrap_or_else(|e| panic!("an example is refused ({}): {e}\n{example}", e.code()));
        let hash = intent.payload_hash.as_str();
        assert!(
            page.contains(&format!("\n{hash}\n")),
            "the page does not print {hash} for\n{example}"
        );
        let canonical = canonical_json(&intent.snapshot.to_json());
        assert!(
            page.contains(&format!("\n{canonical}\n")),
            "the page does not show the canonical form {canonical}"
        );
    }
}
