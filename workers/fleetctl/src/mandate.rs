//! `fleetctl mandate create | list | show | revoke` and `fleetctl mandate revoke-approval`:
//! standing mandates through the API as the principal of the token. `create` builds the
//! `fleet.mandate.v1` statement here, shows it in words, and signs it on this machine with
//! the approver's own key: only the signature leaves it (docs/mandates.md).

use std::path::PathBuf;

use anyhow::Context;
use chrono::{DateTime, Utc};
use clap::{Args, Subcommand};
use fleet_core::approval_statement::{format_expiry, parse_expiry};
use fleet_core::catalogue::Action;
use fleet_core::mandate::{Mandate, MandatePayee, MandatePayees};
use serde_json::{json, Value};

use crate::api_client::ApiClient;
use crate::api_target::ApiArgs;
use crate::args::Format;
use crate::output;

#[derive(Subcommand, Debug)]
pub enum MandateCommand {
    /// Sign and store a standing mandate: it approves, at claim, the operations it covers
    /// (within what the tenant's policy lets a mandate approve), until its budget, count
    /// or window runs out or it is revoked. Its tenant is --tenant (or the context's).
    Create {
        #[command(flatten)]
        terms: MandateTerms,
        /// Your private key (`fleetctl key generate`), registered for your principal.
        #[arg(long, env = "FLEET_SIGNING_KEY")]
        key: PathBuf,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// The mandates of your tenants, newest first, with what is left of each.
    List {
        #[command(flatten)]
        api: ApiArgs,
    },
    /// One mandate: what was signed, and what is left.
    Show {
        /// The mandate (md_…).
        mandate_id: String,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Revoke a mandate (its signer, or an admin): it approves nothing from now on.
    Revoke {
        /// The mandate (md_…).
        mandate_id: String,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Revoke an approval of an operation not yet claimed: your own, or (an admin) the
    /// approver's named with --principal.
    RevokeApproval {
        /// The operation (op_…).
        operation_id: String,
        /// Whose approval (admins only; approvers revoke their own).
        #[arg(long)]
        principal: Option<String>,
        #[command(flatten)]
        api: ApiArgs,
    },
}

/// What a mandate grants, as `mandate create`'s options say it.
#[derive(Args, Debug)]
pub struct MandateTerms {
    /// An action it may approve (repeat for more); payment.create by default.
    #[arg(long = "action", default_value = "payment.create")]
    pub actions: Vec<String>,
    /// A payee it may pay, as ID=FINGERPRINT (the account fingerprint shown with the
    /// payee, `sha256:…`); repeat for more. Or --any-verified-payee.
    #[arg(long = "payee", required_unless_present = "any_verified_payee")]
    pub payees: Vec<String>,
    /// Any payee the provider's directory verified, instead of a list.
    #[arg(long, conflicts_with = "payees")]
    pub any_verified_payee: bool,
    /// The currency (ISO 4217) of every amount it covers.
    #[arg(long)]
    pub currency: String,
    /// The most one operation may be, in minor units.
    #[arg(long)]
    pub per_operation_max_minor: i64,
    /// The most all of them may be together, in minor units.
    #[arg(long)]
    pub budget_minor: i64,
    /// The most operations it may approve.
    #[arg(long)]
    pub count_limit: i64,
    /// Valid from (RFC 3339 UTC, whole seconds, Z); now by default.
    #[arg(long)]
    pub valid_from: Option<String>,
    /// Valid until (RFC 3339 UTC, whole seconds, Z).
    #[arg(long)]
    pub valid_until: String,
    /// Only intents submitted by this principal (an agent); anyone's by default.
    #[arg(long = "for")]
    pub for_principal: Option<String>,
}

/// `ID=sha256:…`.
fn payee_of(text: &str) -> anyhow::Result<MandatePayee> {
    let (id, fingerprint) = text
        .split_once('=')
        .with_context(|| format!("--payee {text}: write ID=FINGERPRINT (sha256:…)"))?;
    Ok(MandatePayee {
        id: id.to_owned(),
        account_fingerprint: fingerprint.to_owned(),
    })
}

fn instant(text: &str, what: &str) -> anyhow::Result<DateTime<Utc>> {
    parse_expiry(text).with_context(|| format!("{what}: write RFC 3339 UTC, whole seconds, Z"))
}

/// The statement of `terms` (valid from `now` unless they say when), checked as the
/// API checks it.
pub fn statement(
    mandate_id: String,
    tenant: String,
    terms: &MandateTerms,
    now: DateTime<Utc>,
) -> anyhow::Result<Mandate> {
    let payees = if terms.any_verified_payee {
        MandatePayees::AnyVerified
    } else {
        MandatePayees::Listed(
            terms
                .payees
                .iter()
                .map(|p| payee_of(p))
                .collect::<anyhow::Result<_>>()?,
        )
    };
    let valid_from = match &terms.valid_from {
        Some(t) => instant(t, "--valid-from")?,
        None => instant(&format_expiry(now), "now")?,
    };
    let valid_until = instant(&terms.valid_until, "--valid-until")?;
    let actions = terms
        .actions
        .iter()
        .map(|a| Action::parse(a).with_context(|| format!("--action {a}: no such action")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let m = Mandate {
        mandate_id,
        tenant_id: tenant,
        actions,
        payees,
        currency: terms.currency.clone(),
        per_operation_max_minor: terms.per_operation_max_minor,
        budget_minor: terms.budget_minor,
        count_limit: terms.count_limit,
        valid_from,
        valid_until,
        for_principal: terms.for_principal.clone(),
    };
    // What the API would refuse is refused here, before anything is signed.
    Mandate::from_json(&m.to_json()).map_err(|p| anyhow::anyhow!("the mandate's {p}"))
}

fn standing(view: &Value) -> String {
    format!(
        "{id} ({status}) tenant {tenant}, signed by {by}: spent {spent} of {budget} {cur} minor units, {used} of {count} operations; available {avail}, revoked {revoked}",
        id = view["mandate_id"].as_str().unwrap_or("?"),
        status = view["status"].as_str().unwrap_or("?"),
        tenant = view["tenant_id"].as_str().unwrap_or("?"),
        by = view["signed_by"].as_str().unwrap_or("?"),
        spent = view["spent_minor"],
        budget = view["budget_minor"],
        cur = view["currency"].as_str().unwrap_or("?"),
        used = view["used_count"],
        count = view["count_limit"],
        avail = view["available_minor"],
        revoked = view["revoked_minor"],
    )
}

fn print(answer_body: &str, view: &Value, format: Format) {
    match format {
        Format::Json => println!("{answer_body}"),
        _ => crate::say!("{}", standing(view)),
    }
}

/// A command's result: the API's answer as it came with `-o json`, `text` otherwise.
fn print_answer(answer_body: &str, format: Format, text: impl FnOnce() -> String) {
    match format {
        Format::Json => println!("{answer_body}"),
        Format::Table => crate::say!("{}", text()),
    }
}

fn mandate_path(id: &str) -> anyhow::Result<String> {
    anyhow::ensure!(
        id.starts_with("md_")
            && id.len() == 29
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'),
        "{id} is no mandate id (md_ + a ULID)"
    );
    Ok(format!("/v1/mandates/{id}"))
}

pub async fn run(command: MandateCommand, format: Format) -> anyhow::Result<()> {
    match command {
        MandateCommand::Create { terms, key, api } => {
            let key = crate::key::read_private(&key)?;
            let tenant = api
                .target()?
                .tenant
                .context("name the mandate's tenant with --tenant")?;
            let m = statement(
                format!("md_{}", ulid::Ulid::new()),
                tenant,
                &terms,
                Utc::now(),
            )?;
            output::note(
                format,
                &format!(
                    "signing, as key {}:\n{}",
                    key.public_key().key_id(),
                    m.to_words()
                ),
            );
            let body = json!({
                "statement": m.to_json(),
                "key_id": key.public_key().key_id().as_str(),
                "signature": key.sign(&m.to_bytes()).to_text(),
            });
            let client = ApiClient::from_args(&api)?;
            let answer = client
                .post_path("/v1/mandates", &body, "storing the mandate")
                .await?;
            print_answer(&answer.body, format, || {
                format!("stored: {}", standing(&answer.json))
            });
        }
        MandateCommand::List { api } => {
            let client = ApiClient::from_args(&api)?;
            let answer = client.get_path("/v1/mandates", "listing mandates").await?;
            match format {
                Format::Json => println!("{}", answer.body),
                _ => {
                    let list = answer.json["mandates"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                    if list.is_empty() {
                        println!("no mandates");
                    }
                    for view in &list {
                        crate::say!("{}", standing(view));
                    }
                }
            }
        }
        MandateCommand::Show { mandate_id, api } => {
            let client = ApiClient::from_args(&api)?;
            let answer = client
                .get_path(&mandate_path(&mandate_id)?, "showing the mandate")
                .await?;
            print(&answer.body, &answer.json, format);
            if format != Format::Json {
                if let Ok(m) = Mandate::from_json(&answer.json["statement"]) {
                    crate::say!("{}", m.to_words());
                }
            }
        }
        MandateCommand::Revoke { mandate_id, api } => {
            let client = ApiClient::from_args(&api)?;
            let path = format!("{}/revoke", mandate_path(&mandate_id)?);
            let answer = client
                .post_path(&path, &json!({}), "revoking the mandate")
                .await?;
            print_answer(&answer.body, format, || {
                format!("revoked: {}", standing(&answer.json))
            });
        }
        MandateCommand::RevokeApproval {
            operation_id,
            principal,
            api,
        } => {
            fleet_core::OperationId::parse(&operation_id).map_err(anyhow::Error::msg)?;
            let client = ApiClient::from_args(&api)?;
            let path = format!("/v1/operations/{operation_id}/approvals/revoke");
            let body = match principal {
                Some(p) => json!({ "principal": p }),
                None => json!({}),
            };
            let answer = client
                .post_path(&path, &body, "revoking the approval")
                .await?;
            print_answer(&answer.body, format, || {
                format!(
                    "approval revoked: {operation_id} is {} ({} of {} approvals)",
                    answer.json["approval_status"].as_str().unwrap_or("?"),
                    answer.json["approvals_received"],
                    answer.json["approvals_required"]
                )
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arguments_make_the_statement_the_api_reads() {
        let fp = format!("sha256:{}", "a".repeat(64));
        let terms = |payees: Vec<String>, per_operation_max_minor| MandateTerms {
            actions: vec!["payment.create".to_owned()],
            any_verified_payee: payees.is_empty(),
            payees,
            currency: "KZT".to_owned(),
            per_operation_max_minor,
            budget_minor: 3_000_000,
            count_limit: 40,
            valid_from: Some("2026-12-01T00:00:00Z".to_owned()),
            valid_until: "2027-01-01T00:00:00Z".to_owned(),
            for_principal: None,
        };
        let id = || "md_01JF0000000000000000000000".to_owned();
        let m = statement(
            id(),
            "org_482".to_owned(),
            &terms(vec![format!("vendor_77={fp}")], 150_000),
            Utc::now(),
        )
        .unwrap();
        assert_eq!(
            m.payees,
            MandatePayees::Listed(vec![payee_of(&format!("vendor_77={fp}")).unwrap()])
        );
        assert_eq!(Mandate::from_json(&m.to_json()).unwrap(), m);
        assert!(payee_of("vendor_77").is_err());
        assert!(
            statement(
                id(),
                "org_482".to_owned(),
                &terms(vec![], 4_000_000),
                Utc::now()
            )
            .is_err(),
            "one operation above the whole budget is refused before signing"
        );
    }
}
