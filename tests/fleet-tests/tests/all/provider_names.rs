//! A provider is its spec in the catalogue and its mapping, nothing else: `fleetctl
//! migrate` writes the catalogue's provider names into the `providers` table, every spec
//! finds its mapping, and the database refuses an operation naming any other provider
//! whoever writes it, while no component can add a name.

use std::collections::BTreeSet;

use fleet_core::ProviderName;
use fleet_providers::ProviderConfigs;
use fleet_store::DbRole;
use fleet_tests::{answer_of, first_column, TestFleet};

const PERMISSION_DENIED: &str = "42501";
const UNKNOWN_PROVIDER: (&str, Option<&str>) = ("23503", Some("operations_provider_fkey"));

/// A pending operation naming `$2` (its id is `$1`), as intake would write it.
const INSERT: &str = "INSERT INTO operations (operation_id, tenant_id, action, provider, payload, payload_hash,
                                             policy_version, data_version, idempotency_key, approval_expires_at)
                      VALUES ($1, 'org_482', 'payment.create', $2, '{}', 'sha256:' || repeat('0', 64),
                              'payments-v3', 'd', $1, now())";

/// What the database answers `statement`, in a transaction rolled back: the test only asks
/// what it would allow.
async fn answer(
    client: &mut tokio_postgres::Client,
    statement: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> (String, Option<String>) {
    let tx = client.transaction().await.unwrap();
    let answer = answer_of(tx.execute(statement, params).await);
    tx.rollback().await.unwrap();
    answer
}

fn owned(expected: (&str, Option<&str>)) -> (String, Option<String>) {
    (expected.0.to_owned(), expected.1.map(str::to_owned))
}

#[tokio::test]
async fn every_provider_spec_has_a_mapping_and_a_row_after_migrate() {
    let fleet = TestFleet::start().await;
    let sql = fleet.sql().await;
    let rows: BTreeSet<String> = first_column(&sql, "SELECT name FROM providers", &[])
        .await
        .into_iter()
        .collect();
    let specs: BTreeSet<String> = ProviderName::all().map(|p| p.as_str().to_owned()).collect();
    assert_eq!(rows, specs, "the providers table is the catalogue's specs");
    let providers = ProviderConfigs::all_at("http://127.0.0.1:9", "sk_test", 1_000, 0, 0)
        .connect()
        .expect("every spec finds its mapping");
    for provider in ProviderName::all() {
        assert!(providers.get(provider.as_str()).is_some(), "{provider}");
    }
    // Every name the catalogue has is one an operation may carry.
    let mut owner = fleet.sql().await;
    for (n, provider) in ProviderName::all().enumerate() {
        let id = format!("op_5{n:025}");
        assert_eq!(
            answer(&mut owner, INSERT, &[&id, &provider.as_str()]).await,
            owned(("ok", None)),
            "{provider}"
        );
    }
    fleet.stop().await;
}

#[tokio::test]
async fn an_operation_naming_an_unknown_provider_is_refused_whoever_writes() {
    let fleet = TestFleet::start().await;
    let id = "op_50000000000000000000000099";
    let known = ProviderName::all().next().unwrap().as_str();
    // The owner, who may write anything, is refused too.
    let mut owner = fleet.sql().await;
    assert_eq!(
        answer(&mut owner, INSERT, &[&id, &"mystery"]).await,
        owned(UNKNOWN_PROVIDER)
    );
    let mut writers = Vec::new();
    for role in DbRole::ALL {
        let mut client = fleet.connect_as(role).await;
        // A role that may insert operations at all is refused the unknown provider by the
        // reference; any other is refused the insert itself.
        let may_insert = answer(&mut client, INSERT, &[&id, &known]).await == owned(("ok", None));
        let expected = if may_insert {
            writers.push(role);
            owned(UNKNOWN_PROVIDER)
        } else {
            owned((PERMISSION_DENIED, None))
        };
        assert_eq!(
            answer(&mut client, INSERT, &[&id, &"mystery"]).await,
            expected,
            "{role:?}"
        );
        // And no component makes the database know another provider.
        for statement in [
            "INSERT INTO providers (name) VALUES ('mystery')",
            "UPDATE providers SET name = 'mystery'",
            "DELETE FROM providers",
        ] {
            assert_eq!(
                answer(&mut client, statement, &[]).await,
                owned((PERMISSION_DENIED, None)),
                "{role:?}: {statement}"
            );
        }
    }
    assert!(
        writers.contains(&DbRole::Prepare) && writers.contains(&DbRole::Api),
        "intake's roles insert operations: {writers:?}"
    );
    fleet.stop().await;
}
