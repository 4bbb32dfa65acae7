//! The verifier against vectors computed by an independent implementation (the Python
//! `standardwebhooks` package; see fixtures/gen_signature_vectors.py): the same verdict
//! on every delivery, and the same `v1,...` string when signing.

use base64::Engine;
use fleet_webhook_ingest::signature::{sign, verify, SignedHeaders};
use fleet_webhook_ingest::WebhookSecrets;
use serde_json::Value;

const VECTORS: &str = include_str!("fixtures/signature_vectors.json");

fn key(secret: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap()
}

#[test]
fn every_vector_gets_the_python_verdict() {
    let fixture: Value = serde_json::from_str(VECTORS).unwrap();
    let now = fixture["now"].as_i64().unwrap();
    let vectors = fixture["vectors"].as_array().unwrap();
    assert!(vectors.len() >= 30, "the fixture lost vectors");
    let (mut valid, mut invalid) = (0, 0);
    for v in vectors {
        let name = v["name"].as_str().unwrap();
        let secrets: Vec<&str> = v["receiver_secrets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        let secrets = WebhookSecrets::parse(&secrets.join(",")).unwrap();
        let h = &v["headers"];
        let header = |n: &str| h[n].as_str().unwrap().as_bytes();
        let headers = SignedHeaders::parse(
            header("webhook-id"),
            header("webhook-timestamp"),
            header("webhook-signature"),
        )
        .unwrap();
        let payload = v["payload"].as_str().unwrap().as_bytes();
        let expected = v["valid"].as_bool().unwrap();
        let verdict = verify(&secrets, &headers, payload, now);
        assert_eq!(verdict.is_ok(), expected, "{name}: {verdict:?}");
        if expected {
            valid += 1
        } else {
            invalid += 1
        }
    }
    assert!(
        valid >= 10 && invalid >= 10,
        "{valid} valid, {invalid} invalid"
    );
}

#[test]
fn signing_reproduces_the_python_signatures() {
    let fixture: Value = serde_json::from_str(VECTORS).unwrap();
    let mut checked = 0;
    for v in fixture["vectors"].as_array().unwrap() {
        let Some(secret) = v["signed_with"].as_str() else {
            continue;
        };
        let h = &v["headers"];
        let ts: i64 = h["webhook-timestamp"].as_str().unwrap().parse().unwrap();
        let ours = sign(
            &key(secret),
            h["webhook-id"].as_str().unwrap(),
            ts,
            v["payload"].as_str().unwrap().as_bytes(),
        );
        assert_eq!(
            ours,
            h["webhook-signature"].as_str().unwrap(),
            "{}",
            v["name"]
        );
        checked += 1;
    }
    assert!(checked >= 8);
}
