//! `fleetctl approve | reject | resolve | dispute`: a person's decisions go through the
//! HTTP API as the principal of their token (`api_target`), so they are authorized (role,
//! tenant, maker-checker), counted towards a quorum and recorded exactly as any other
//! door's. fleetctl never writes a decision to Postgres itself.

use anyhow::Context;
use chrono::{DateTime, Utc};
use fleet_core::approval_statement::{expiry_for, format_expiry};
use fleet_core::{
    ApprovalStatement, ApprovalStatus, ApproverKey, OperationView, Snapshot, StatementSubject,
};
use serde_json::{json, Value};

use crate::api_client::ApiClient;
use crate::args::Format;
use crate::output;

fn quorum(view: &OperationView) -> String {
    format!("{} of {}", view.approvals_received, view.approvals_required)
}

/// Approves `op`'s snapshot `hash`; with `key`, signed: the statement is rebuilt here from
/// the snapshot fetched (whose hash must be the one reviewed), shown, and signed on this
/// machine. Only the signature leaves it.
pub async fn approve(
    client: &ApiClient,
    op: &str,
    hash: &str,
    key: Option<&ApproverKey>,
    format: Format,
) -> anyhow::Result<()> {
    let body = match key {
        None => json!({ "payload_hash": hash }),
        Some(key) => {
            let view = client.operation(op).await?;
            let statement = statement_of(&view, hash, Utc::now())?;
            output::note(
                format,
                &format!(
                    "signing, as key {}:\n{}",
                    key.public_key().key_id(),
                    statement.in_words()
                ),
            );
            signed_body(&statement, key)
        }
    };
    decide(client, op, "approve", body, format, |view| {
        if view.approval_status == ApprovalStatus::Approved {
            format!(
                "approved {op} ({hash}): {} approvals; execution starts",
                quorum(view)
            )
        } else {
            format!(
                "approval of {op} recorded: {} approvals; waiting for another approver",
                quorum(view)
            )
        }
    })
    .await
}

/// Sends the decision `verb` with `body` on `op` and prints the answer: the operation's
/// view as the API sent it with `-o json`, `words` about it otherwise.
async fn decide(
    client: &ApiClient,
    op: &str,
    verb: &str,
    body: Value,
    format: Format,
    words: impl FnOnce(&OperationView) -> String,
) -> anyhow::Result<()> {
    let view = client.decide(op, verb, body).await?;
    output::result(format, || view.to_json(), || words(&view));
    Ok(())
}

/// The approve body carrying `key`'s signature of `statement`.
pub fn signed_body(statement: &ApprovalStatement, key: &ApproverKey) -> Value {
    json!({
        "payload_hash": statement.payload_hash,
        "key_id": key.public_key().key_id().as_str(),
        "signature": key.sign(&statement.to_bytes()).to_text(),
        "expires_at": format_expiry(statement.expires_at),
    })
}

/// The statement to sign for the operation `view` (as the API shows it), rebuilt with
/// fleet-core from its snapshot, never from words the server wrote. The snapshot must
/// hash to `reviewed`, the hash the approver looked at. It expires when the operation's
/// approval window closes (no execution may start later), and within a day at most.
pub fn statement_of(
    view: &OperationView,
    reviewed: &str,
    now: DateTime<Utc>,
) -> anyhow::Result<ApprovalStatement> {
    let snapshot = Snapshot {
        operation_id: view.operation_id.to_string(),
        tenant_id: view.tenant_id.clone(),
        action: view.action.clone(),
        provider: view.provider.clone(),
        target: view.target.clone(),
        payload: view.payload.clone(),
        policy_version: view.policy_version.clone(),
        data_version: view.data_version.clone(),
    };
    let computed = snapshot.hash();
    anyhow::ensure!(
        computed.as_str() == reviewed,
        "the snapshot the API shows hashes to {computed}, not to {reviewed}, the hash you reviewed: nothing was signed"
    );
    let window = view.approval_expires_at.at();
    let expires_at = expiry_for(window, now)
        .context("the operation's approval window has closed: nothing to sign")?;
    // As the API showed it: the view reads and writes the payee evidence unchanged.
    let payee = view.payee.as_ref().map(|p| p.to_json());
    let subject = StatementSubject {
        operation_id: &snapshot.operation_id,
        tenant_id: &snapshot.tenant_id,
        action: fleet_core::Action::parse(&snapshot.action).with_context(|| {
            format!(
                "the operation's action {:?} is not one this fleetctl knows: nothing was signed",
                snapshot.action
            )
        })?,
        target: snapshot.target.as_deref(),
        payload: &snapshot.payload,
        payload_hash: reviewed,
        // Not covered by the hash: if the API showed other payee details than the row
        // holds, execute's verification of this signature fails and nothing is paid.
        payee: payee.as_ref(),
    };
    Ok(ApprovalStatement::derive(&subject, expires_at))
}

/// A decision on an operation other than an approval, with what it carries.
pub enum Decision<'a> {
    /// Refuses the operation, for `reason`.
    Reject { reason: &'a str },
    /// Settles an escalated operation by hand as `outcome`, on `evidence`.
    Resolve {
        outcome: &'a str,
        external_id: Option<&'a str>,
        evidence: &'a str,
    },
    /// Takes the operation out of the workers' hands, for `reason`.
    Dispute { reason: &'a str },
}

impl Decision<'_> {
    fn verb(&self) -> &'static str {
        match self {
            Decision::Reject { .. } => "reject",
            Decision::Resolve { .. } => "resolve",
            Decision::Dispute { .. } => "dispute",
        }
    }

    fn body(&self) -> Value {
        match self {
            Decision::Reject { reason } | Decision::Dispute { reason } => {
                json!({ "reason": reason })
            }
            Decision::Resolve {
                outcome,
                external_id,
                evidence,
            } => json!({ "outcome": outcome, "external_id": external_id, "evidence": evidence }),
        }
    }

    fn words(&self, op: &str, view: &OperationView) -> String {
        match self {
            Decision::Reject { .. } => format!("rejected {op}: {}", view.status),
            Decision::Resolve { .. } => format!("{op} is now {}", view.status),
            Decision::Dispute { .. } => {
                format!("{op} is disputed; workers will not move it again")
            }
        }
    }
}

/// Sends `decision` on `op` and prints the answer.
pub async fn send(
    client: &ApiClient,
    op: &str,
    decision: Decision<'_>,
    format: Format,
) -> anyhow::Result<()> {
    let body = decision.body();
    decide(client, op, decision.verb(), body, format, |view| {
        decision.words(op, view)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(expires: &str) -> OperationView {
        OperationView {
            operation_id: fleet_core::OperationId::parse("op_01JD5ZQ8J8N0M1Q2R3S4T5V6W7").unwrap(),
            tenant_id: "org_482".into(),
            action: "payment.create".into(),
            provider: "payments".into(),
            target: None,
            payload: json!({"invoice_id": "inv_9300", "beneficiary_id": "vendor_12", "amount_minor": 150000000, "currency": "KZT"}),
            policy_version: "payments-v3".into(),
            data_version: "inv_9300@1".into(),
            approval_expires_at: fleet_core::view::UtcMicros::parse(expires).unwrap(),
            ..fleet_core::view::example()
        }
    }

    fn hash_of(v: &OperationView) -> String {
        Snapshot {
            operation_id: v.operation_id.to_string(),
            tenant_id: "org_482".into(),
            action: "payment.create".into(),
            provider: "payments".into(),
            target: None,
            payload: v.payload.clone(),
            policy_version: "payments-v3".into(),
            data_version: "inv_9300@1".into(),
        }
        .hash()
        .as_str()
        .to_owned()
    }

    #[test]
    fn the_statement_is_rebuilt_from_the_snapshot_reviewed_and_expires_with_the_window() {
        let now = DateTime::parse_from_rfc3339("2026-12-01T12:00:00Z")
            .unwrap()
            .to_utc();
        let v = view("2026-12-01T13:00:00.250000Z");
        let s = statement_of(&v, &hash_of(&v), now).unwrap();
        assert_eq!(
            s.summary,
            "Pay 1,500,000.00 KZT to vendor_12 for invoice inv_9300"
        );
        assert_eq!(
            (s.amount.as_deref(), s.payee.as_deref()),
            (Some("1,500,000.00 KZT"), Some("vendor_12"))
        );
        assert_eq!(format_expiry(s.expires_at), "2026-12-01T13:00:00Z");
        // A window longer than a day is capped below a day.
        let long = view("2026-12-09T12:00:00.000000Z");
        let capped = statement_of(&long, &hash_of(&long), now).unwrap();
        assert!(capped.expires_at < now + chrono::Duration::hours(24));
        // A closed window has nothing to sign.
        let closed = view("2026-12-01T11:00:00.000000Z");
        assert!(statement_of(&closed, &hash_of(&closed), now).is_err());
    }

    #[test]
    fn a_snapshot_that_is_not_the_one_reviewed_is_never_signed() {
        let now = DateTime::parse_from_rfc3339("2026-12-01T12:00:00Z")
            .unwrap()
            .to_utc();
        let reviewed = view("2026-12-01T13:00:00.000000Z");
        let mut shown = reviewed.clone();
        shown.payload["beneficiary_id"] = json!("mallory");
        let refused = statement_of(&shown, &hash_of(&reviewed), now).unwrap_err();
        assert!(
            refused.to_string().contains("nothing was signed"),
            "{refused}"
        );
    }
}
