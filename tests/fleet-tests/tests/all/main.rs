//! The fleet's integration tests: one test binary, one module per subject. Every test
//! links the whole fleet, so one binary is linked once where a binary per file was linked
//! once each (docs/testing.md#one-test-binary has the figures). A new file here is a
//! module: add its `mod` line below, or cargo never compiles it.
//!
//! `cargo test -p fleet-tests --test all crash::` runs one module.

mod action_pieces;
mod actions;
mod api;
mod api_abuse;
mod api_log_lines;
mod api_metrics;
mod api_problems;
mod api_public_url;
mod approver_removal;
mod approver_standing;
mod batch_approvals;
mod bench_smoke;
mod broker_failover;
mod broker_users;
mod chaos;
mod cli;
mod cli_api;
mod cli_json;
mod console;
mod console_a11y;
mod console_browser;
mod console_mandates;
mod console_words;
mod contracts;
mod crash;
mod crash_actions;
mod credentials;
mod crm_throttle;
mod database_not_set_up;
mod db_roles;
mod dead_letter_doorbells;
mod dead_letters;
mod decisions;
mod demo_sandbox;
mod deployments;
mod door_limits;
mod dot_ids;
mod event_types;
mod events;
mod evidence_bundle;
mod execute;
mod final_is_final;
mod gauge_reads;
mod layout;
mod live_quorum;
mod log_hygiene;
mod mandate_coverage;
mod mandates;
mod mcp;
mod metrics_at_start;
mod notifications;
mod openapi_intent;
mod operation_history;
mod operation_view_type;
mod operator;
mod orders;
mod otlp_export;
mod outbox;
mod parallel_plans;
mod payee_directory;
mod payee_names;
mod payees;
mod pg_failover;
mod policies_at_start;
mod policy_in_force;
mod pool_growth;
mod possible_duplicates;
mod prepare;
mod promise;
mod provider_answers;
mod provider_credentials;
mod provider_names;
mod provider_rate;
mod queue_identity;
mod quorum;
mod retention;
mod risk_aggregates;
mod rule_tables;
mod schema;
mod secret_files;
mod signed_approvals;
mod signed_batches;
mod slow_bodies;
mod store_cas;
mod stripe_accounts;
mod stripe_chaos;
mod stripe_charge_risk;
mod stripe_charges;
mod stripe_demo;
mod stripe_refund_page;
mod stripe_refunds;
mod stripe_search;
mod stripe_transfers;
mod stripe_webhooks;
mod succeeded_proof;
mod tenant_ids;
mod tenant_objects;
mod traces;
mod webhook_flood;
mod webhook_forgery;
mod webhooks;

/// Every file of this directory is a module of the binary: cargo compiles only the files
/// `main.rs` names, so a file without its `mod` line would never run, silently.
#[test]
fn every_file_of_the_directory_is_a_module() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all");
    let main = std::fs::read_to_string(dir.join("main.rs")).expect("main.rs");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("tests/all") {
        let name = entry.expect("an entry").file_name();
        let name = name.to_string_lossy();
        if let Some(module) = name.strip_suffix(".rs") {
            if module != "main" && !main.contains(&format!("\nmod {module};\n")) {
                missing.push(module.to_owned());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "no `mod` line in main.rs for {missing:?}"
    );
}

/// The fleet's tests stay one binary: a file beside this directory would be a test binary
/// of its own, linking the whole fleet once more.
#[test]
fn no_test_file_lies_beside_this_directory() {
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut strays = Vec::new();
    for entry in std::fs::read_dir(&tests).expect("tests") {
        let path = entry.expect("an entry").path();
        let binary = path.extension().is_some_and(|e| e == "rs") || path.join("main.rs").is_file();
        if binary && !path.ends_with("all") {
            strays.push(path.display().to_string());
        }
    }
    assert!(
        strays.is_empty(),
        "each of {strays:?} is a test binary of its own: make it a module of tests/all"
    );
}
