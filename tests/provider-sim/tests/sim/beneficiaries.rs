//! The directory of beneficiaries: the lookup's shape, a replacement bumping the version,
//! and the payment precondition on it (409, nothing created, nothing saved under the key).

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::common::{error_code, json_of, payment_body, start_default, start_with_fault, Sim};

async fn replace_account(sim: &Sim, id: &str, account_number: &str) -> Value {
    let response = sim
        .admin_post(
            "/_sim/beneficiaries",
            &json!({"id": id, "name": "Vendor 77 LLP", "country": "KZ",
                    "account_number": account_number}),
        )
        .await;
    let (status, body) = json_of(response).await;
    assert!(status.is_success(), "{status} {body}");
    body
}

#[tokio::test]
async fn a_beneficiary_is_shown_with_its_masked_account_and_version() {
    let sim = start_default().await;
    let (status, shown) = json_of(sim.get("/v1/beneficiaries/vendor_77").await).await;
    assert_eq!(status, StatusCode::OK);
    let mut members: Vec<&str> = shown
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    members.sort_unstable();
    assert_eq!(
        members,
        [
            "account",
            "country",
            "created_at",
            "id",
            "name",
            "updated_at",
            "verified",
            "version"
        ]
    );
    assert_eq!(shown["id"], "vendor_77");
    assert_eq!(shown["country"], "KZ");
    assert_eq!(shown["account"]["scheme"], "iban");
    let masked = shown["account"]["masked"].as_str().unwrap();
    assert!(masked.starts_with("KZ•• •••• •••• "), "{masked}");
    let fingerprint = shown["account"]["fingerprint"].as_str().unwrap();
    assert!(
        fingerprint.starts_with("sha256:") && fingerprint.len() == 71,
        "{fingerprint}"
    );
    assert_eq!(
        (shown["verified"].clone(), shown["version"].clone()),
        (json!(true), json!(1))
    );

    let (status, missing) = json_of(sim.get("/v1/beneficiaries/invalid_vendor").await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&missing), "resource_missing");
}

#[tokio::test]
async fn replacing_the_account_bumps_the_version_and_changes_the_fingerprint() {
    let sim = start_default().await;
    let (_, before) = json_of(sim.get("/v1/beneficiaries/vendor_77").await).await;
    let replaced = replace_account(&sim, "vendor_77", "KZ07 999K ZT00 0000 4321").await;
    assert_eq!(replaced["version"], 2);
    assert_eq!(replaced["account"]["masked"], "KZ•• •••• •••• 4321");
    assert_ne!(
        replaced["account"]["fingerprint"],
        before["account"]["fingerprint"]
    );
    assert!(
        !replaced.to_string().contains("999KZT"),
        "the full number never shows"
    );
    let (_, after) = json_of(sim.get("/v1/beneficiaries/vendor_77").await).await;
    assert_eq!(after, replaced);

    // The same details again change nothing that a version counts.
    let again = replace_account(&sim, "vendor_77", "KZ07999KZT0000004321").await;
    assert_eq!(again["version"], 2);
    assert_eq!(
        again["account"]["fingerprint"],
        replaced["account"]["fingerprint"]
    );

    let created = replace_account(&sim, "vendor_new", "KZ0112345678").await;
    assert_eq!(created["version"], 1);
}

#[tokio::test]
async fn a_stale_beneficiary_version_is_409_with_nothing_created_or_saved() {
    let sim = start_default().await;
    replace_account(&sim, "vendor_77", "KZ07 999K ZT00 0000 4321").await;
    let mut body = payment_body("op_stale");
    body["beneficiary_version"] = json!(1);

    for _ in 0..2 {
        let response = sim.create_payment("op_stale", &body).await;
        assert!(response.headers().get("idempotent-replayed").is_none());
        let (status, error) = json_of(response).await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(
            error,
            json!({"error": {"type": "precondition_failed", "code": "beneficiary_changed",
                             "current_version": 2}})
        );
    }
    assert_eq!(sim.effects("op_stale").await["payments"], 0);
    let statuses: Vec<Value> = sim
        .requests("op_stale")
        .await
        .iter()
        .map(|r| r["status"].clone())
        .collect();
    assert_eq!(statuses, [json!(409), json!(409)]);

    // Nothing was saved under the key: the same key with the current version executes.
    body["beneficiary_version"] = json!(2);
    let (status, created) = json_of(sim.create_payment("op_stale", &body).await).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["status"], "succeeded");
    assert_eq!(sim.effects("op_stale").await["payments"], 1);
}

#[tokio::test]
async fn an_unknown_beneficiary_is_402_even_with_a_version() {
    let sim = start_default().await;
    let mut body = payment_body("op_unknown");
    body["beneficiary_id"] = json!("nobody_1");
    body["beneficiary_version"] = json!(1);
    let (status, error) = json_of(sim.create_payment("op_unknown", &body).await).await;
    assert_eq!(status, StatusCode::PAYMENT_REQUIRED);
    assert_eq!(error_code(&error), "invalid_beneficiary");
    assert_eq!(sim.effects("op_unknown").await["payments"], 0);
}

#[tokio::test]
async fn read_faults_apply_to_the_lookup() {
    let sim = start_with_fault(
        json!({"route": "GET /v1/beneficiaries/{id}", "kind": "error_before_commit",
                     "status": 503}),
    )
    .await;
    let failed = sim.get("/v1/beneficiaries/vendor_77").await;
    assert_eq!(failed.status(), StatusCode::SERVICE_UNAVAILABLE);
    let answered = sim.get("/v1/beneficiaries/vendor_77").await;
    assert_eq!(answered.status(), StatusCode::OK);
    let refused = sim
        .admin_post(
            "/_sim/faults",
            &json!({"route": "GET /v1/beneficiaries/{id}", "kind": "drop_after_commit"}),
        )
        .await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn reset_restores_the_seeded_directory() {
    let sim = start_default().await;
    replace_account(&sim, "vendor_77", "KZ07 999K ZT00 0000 4321").await;
    let reset = sim.admin_post("/_sim/reset", &json!({})).await;
    assert_eq!(reset.status(), StatusCode::NO_CONTENT);
    let (_, shown) = json_of(sim.get("/v1/beneficiaries/vendor_77").await).await;
    assert_eq!(shown["version"], 1);
}
