//! What a test of standing mandates starts from: the tenant under payments-v5 (the policy
//! under which a mandate approves), and a payee paid once before by a person's approval, so
//! that a later payment to it carries no risk cue a mandate would stop at.

use fleet_core::Status;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::{hash_of, op_of, ApiProcess, TestFleet, TENANT};

impl TestFleet {
    /// A fresh fleet with payments-v5 in force for `payment.create` of [`TENANT`].
    pub async fn with_mandates() -> TestFleet {
        let fleet = TestFleet::start().await;
        fleet
            .assign_policy(Some(TENANT), "payment.create", "payments-v5")
            .await;
        fleet
    }

    /// `seed` submitted through `api` by the bearer of `agent`, approved by the bearer of
    /// `approver` and paid (execute must be running): its payee's account fingerprint, as
    /// the directory showed it at intake.
    pub async fn paid_before(
        &self,
        api: &ApiProcess,
        agent: &str,
        approver: &str,
        seed: &Value,
    ) -> String {
        let view = api.submitted(&self.http, agent, seed).await;
        let fingerprint = view["payee"]["account"]["fingerprint"]
            .as_str()
            .expect("the payee's fingerprint")
            .to_owned();
        let path = format!("/v1/operations/{}/approve", op_of(seed));
        let approved = api
            .post(
                &self.http,
                approver,
                &path,
                &json!({"payload_hash": hash_of(seed)}),
            )
            .await;
        assert_eq!(approved.status(), StatusCode::OK);
        self.reaches(&op_of(seed), Status::Succeeded).await;
        fingerprint
    }
}
