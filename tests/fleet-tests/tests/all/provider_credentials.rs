//! A provider that refuses the fleet's credentials (401, 403) is counted on its own, by the
//! real fleet-execute: the series an SRE alerts on (`FleetProviderCredentialsRefused`),
//! whatever becomes of the operation.

use fleet_core::Status;
use fleet_tests::{admin_url_of, eventually, intent, scrape, TestFleet};
use serde_json::json;

/// The value of `fleet_provider_credentials_refused_total{provider="payments"}` in `text`.
fn refused_of_payments(text: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix("fleet_provider_credentials_refused_total{provider=\"payments\"} ")?
            .trim()
            .parse()
            .ok()
    })
}

#[tokio::test]
async fn a_refused_credential_is_counted_and_nothing_is_paid_by_the_refused_request() {
    let fleet = TestFleet::with_prepare().await;
    let execute = fleet.spawn_process("fleet-execute", &[]);
    let admin = admin_url_of(&execute).await;
    let http = reqwest::Client::new();
    let at_start = eventually("execute's series at zero", || async {
        refused_of_payments(&scrape(&http, &admin).await?)
    })
    .await;
    assert_eq!(at_start, 0.0);

    // The provider refuses the key (nothing executed, nothing saved under the key): the
    // reference protocol's 401 proves no effect, so the operation is back to not started.
    fleet
        .sim_fault(json!({"route": "POST /v1/payments", "kind": "error_before_commit", "status": 401, "times": 1}))
        .await;
    let op = fleet.submit_and_approve(&intent()).await;
    let counted = eventually("the refusal to be counted", || async {
        refused_of_payments(&scrape(&http, &admin).await?).filter(|n| *n > 0.0)
    })
    .await;
    assert_eq!(counted, 1.0);
    fleet.reaches(&op, Status::NotStarted).await;
    assert_eq!(fleet.sim_effects(&op).await, 0, "nothing paid");
    assert!(
        execute
            .log_text()
            .contains("the provider refused the fleet's credentials"),
        "{}",
        execute.log_text()
    );
    drop(execute);
    fleet.stop().await;
}
