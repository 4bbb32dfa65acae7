//! The payload hash agrees with an independent RFC 8785 implementation (Python
//! `rfc8785`, see fixtures/gen_hash_vectors.py) on every committed vector.

use fleet_core::{canonical_json, parse_intent};
use serde_json::Value;

#[test]
fn payload_hashes_match_the_independent_implementation() {
    let vectors: Vec<Value> =
        serde_json::from_str(include_str!("fixtures/hash_vectors.json")).unwrap();
    assert!(vectors.len() >= 10, "at least ten vectors are committed");
    for v in &vectors {
        let name = v["name"].as_str().unwrap();
        let bytes = serde_json::to_vec(&v["intent"]).unwrap();
        let intent = parse_intent(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            canonical_json(&intent.snapshot.to_json()),
            v["canonical_snapshot"].as_str().unwrap(),
            "{name}: canonical form"
        );
        assert_eq!(
            intent.payload_hash.as_str(),
            v["payload_hash"].as_str().unwrap(),
            "{name}: hash"
        );
    }
}
