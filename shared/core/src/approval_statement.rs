//! The statement an approver signs: what they approve, in the words they were shown, as
//! RFC 8785 canonical JSON (the same canonical form as the payload hash, `hash.rs`).
//!
//! ```json
//! {"action":"payment.create","amount":"1,500,000.00 KZT","expires_at":"2026-12-01T18:00:00Z",
//! "operation_id":"op_…","payee":"vendor_77","payee_account":"KZ•• •••• •••• 1234",
//! "payee_name":"Vendor 77 LLP","payee_name_check":"match","payee_version":1,
//!  "payload_hash":"sha256:…","statement":"fleet.approval.v4",
//!  "summary":"Pay 1,500,000.00 KZT to \"Vendor 77 LLP\" (vendor_77, account KZ•• •••• •••• 1234, for invoice inv_9300)","tenant_id":"org_482"}
//! ```
//!
//! v4 names the payee in the summary as the directory holds the name
//! (`wording::headline_naming_payee`) and carries the payee name check's result
//! (`payee_name_check`, `null` when no check was made). A v3 statement (the summary named
//! the payee's id only, no `payee_name_check`) still verifies: [`ApprovalStatement::derive_as`]
//! rebuilds either version from the same row, and the verifier tries each in
//! [`STATEMENT_VERSIONS`].
//!
//! `summary` is the operation's headline in plain text (`wording::headline`): a sentence of
//! typed values (action, amount, who receives it), then any free text of the payload after
//! ` — free text: `, each piece quoted with its quotes escaped and its hidden characters
//! revealed, so a deal's name cannot put words (another amount) inside the sentence
//! signed:
//!
//! ```text
//! Create a deal worth 50,000,000.00 KZT, owned by u_7 — free text: name "Acme renewal\" worth 10.00 KZT", stage "lead"
//! ```
//!
//! The words (`action`, `amount`, `payee`, `summary`) are derived here from the stored
//! snapshot, and the payee's name, masked account and version from the payee evidence
//! kept at intake (`fleet_intake::payee`; all three `null` when the payee is unknown or the action
//! names none), never taken from whoever asks for a signature or presents one: the signer
//! rebuilds them from the operation it fetched (and checks its hash), and the verifier
//! rebuilds them from the row it is about to execute. A signature thus binds the payee
//! version the approver was shown, the one execute makes the payment conditional on. A signature therefore proves that
//! the key's holder agreed to exactly these words for exactly this operation and hash,
//! until `expires_at`. Who signed is the key's principal (a key is registered for one
//! principal, once), so the statement does not name the approver. Pure: the expiry is an
//! input.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value};

use crate::catalogue::Action;
use crate::hash::canonical_json;
use crate::money::format_amount;
use crate::payee::PayeeEvidence;
use crate::visible::reveal;
use crate::wording::{describe, headline_naming_payee, quote};

/// The statement's version, its first member in meaning: a verifier that meets another
/// version refuses it rather than guess what was signed. v3: the summary says typed values
/// first and quotes free text after them (v2 let a deal's name into its sentence). v4: the
/// summary names the payee as the directory holds the name, and the payee name check's
/// result is signed (`payee_name_check`).
pub const STATEMENT_VERSION: &str = "fleet.approval.v4";

/// The statement made before v4, still verified (a signature given before an upgrade).
pub const STATEMENT_V3: &str = "fleet.approval.v3";

/// Every version a verifier rebuilds, newest first: what signers make now, then what they
/// made before.
pub const STATEMENT_VERSIONS: &[&str] = &[STATEMENT_VERSION, STATEMENT_V3];

/// The longest a signed statement may stay valid, counted from the approval: a signature
/// is consent given at one moment, not a standing order.
pub const MAX_STATEMENT_LIFETIME_S: i64 = 24 * 3600;

/// What the statement is about: the stored operation. Every member is read from the
/// operation's own row, never from a request.
#[derive(Debug, Clone, Copy)]
pub struct StatementSubject<'a> {
    pub operation_id: &'a str,
    pub tenant_id: &'a str,
    pub action: Action,
    pub target: Option<&'a str>,
    pub payload: &'a Value,
    pub payload_hash: &'a str,
    /// The payee evidence kept at intake (`operations.payee`), if any.
    pub payee: Option<&'a Value>,
}

/// An approver's statement about one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalStatement {
    /// One of [`STATEMENT_VERSIONS`].
    pub version: &'static str,
    pub operation_id: String,
    pub tenant_id: String,
    pub payload_hash: String,
    pub action: String,
    /// `12,500.00 KZT`; `None` for an action without an amount.
    pub amount: Option<String>,
    /// Who receives the effect (a payment's beneficiary); `None` when the action names
    /// no such party.
    pub payee: Option<String>,
    /// The payee's name, masked account and version as found at intake; `None` when the
    /// payee is unknown or the action names none.
    pub payee_name: Option<String>,
    pub payee_account: Option<String>,
    pub payee_version: Option<i64>,
    /// The payee name check's result as kept at intake (`match`, `close_match`,
    /// `no_match`, `not_possible`); `None` when none was made. Not in v3.
    pub payee_name_check: Option<String>,
    /// The operation's headline as one line (`wording::describe`): typed values first,
    /// free text quoted after them.
    pub summary: String,
    pub expires_at: DateTime<Utc>,
}

impl ApprovalStatement {
    /// The statement an approver signs for `subject`, valid until `expires_at`.
    pub fn derive(subject: &StatementSubject<'_>, expires_at: DateTime<Utc>) -> ApprovalStatement {
        ApprovalStatement::derive_as(subject, expires_at, STATEMENT_VERSION)
    }

    /// The statement of `version` (one of [`STATEMENT_VERSIONS`]; any other is read as the
    /// current one) for `subject`: what a verifier rebuilds to check a signature made
    /// under that version.
    pub fn derive_as(
        subject: &StatementSubject<'_>,
        expires_at: DateTime<Utc>,
        version: &str,
    ) -> ApprovalStatement {
        let v3 = version == STATEMENT_V3;
        let spec = Some(subject.action.spec());
        let payload = subject.payload;
        let amount = spec.filter(|s| s.has_amount).and_then(|_| {
            format_amount(
                payload.get("amount_minor")?.as_i64()?,
                payload.get("currency")?.as_str()?,
            )
        });
        let payee = spec
            .and_then(|s| s.payee)
            .and_then(|member| payload.get(member)?.as_str())
            .map(str::to_owned);
        let evidence = subject.payee.and_then(PayeeEvidence::from_json);
        let found = evidence.as_ref().and_then(|e| e.found().cloned());
        let summary = if v3 {
            describe(subject.action, subject.target, payload)
        } else {
            headline_naming_payee(subject.action, subject.target, payload, subject.payee).plain()
        };
        ApprovalStatement {
            version: if v3 { STATEMENT_V3 } else { STATEMENT_VERSION },
            operation_id: subject.operation_id.to_owned(),
            tenant_id: subject.tenant_id.to_owned(),
            payload_hash: subject.payload_hash.to_owned(),
            action: subject.action.wire_name().to_owned(),
            amount,
            payee,
            payee_name: found.as_ref().map(|p| p.name.clone()),
            payee_account: found.as_ref().map(|p| p.account.masked.clone()),
            payee_version: found.as_ref().map(|p| p.version),
            payee_name_check: evidence
                .as_ref()
                .and_then(PayeeEvidence::name_check)
                .filter(|_| !v3)
                .map(|c| c.result.as_str().to_owned()),
            summary,
            // Whole seconds: the instant is written without a fraction, so a signer and a
            // verifier that hold it at different precisions still write the same bytes.
            expires_at: truncate_to_seconds(expires_at),
        }
    }

    pub fn to_json(&self) -> Value {
        let mut statement = json!({
            "statement": self.version,
            "operation_id": self.operation_id,
            "tenant_id": self.tenant_id,
            "payload_hash": self.payload_hash,
            "action": self.action,
            "amount": self.amount,
            "payee": self.payee,
            "payee_name": self.payee_name,
            "payee_account": self.payee_account,
            "payee_version": self.payee_version,
            "summary": self.summary,
            "expires_at": format_expiry(self.expires_at),
        });
        if self.version != STATEMENT_V3 {
            statement["payee_name_check"] = json!(self.payee_name_check);
        }
        statement
    }

    /// The bytes signed: RFC 8785 canonical JSON, UTF-8.
    pub fn to_bytes(&self) -> Vec<u8> {
        canonical_json(&self.to_json()).into_bytes()
    }

    /// The statement as the signer is shown it before signing, one fact a line. The
    /// payee's name is the provider directory's free text: quoted ([`quote`]), so it cannot
    /// break the line or pass for another fact; the masked account is revealed.
    pub fn in_words(&self) -> String {
        let mut out = format!(
            "{}\n  operation {} (tenant {})\n  action    {}\n",
            self.summary, self.operation_id, self.tenant_id, self.action
        );
        if let Some(amount) = &self.amount {
            out.push_str(&format!("  amount    {amount}\n"));
        }
        if let Some(payee) = &self.payee {
            out.push_str(&format!("  payee     {payee}\n"));
        }
        if let (Some(name), Some(account), Some(version)) =
            (&self.payee_name, &self.payee_account, self.payee_version)
        {
            out.push_str(&format!(
                "  paid to   {}, account {} (payee version {version})\n",
                quote(name),
                reveal(account)
            ));
        } else if self.payee.is_some() {
            out.push_str("  paid to   unknown: the provider could not confirm this payee\n");
        }
        if let Some(check) = &self.payee_name_check {
            out.push_str(&format!("  name check {check}\n"));
        }
        out.push_str(&format!(
            "  hash      {}\n  valid until {}",
            self.payload_hash,
            format_expiry(self.expires_at)
        ));
        out
    }
}

fn truncate_to_seconds(at: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(at.timestamp(), 0).unwrap_or(at)
}

/// An expiry as the statement writes it: RFC 3339, UTC, whole seconds, `Z`
/// (`2026-12-01T18:00:00Z`).
pub fn format_expiry(at: DateTime<Utc>) -> String {
    truncate_to_seconds(at).to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Reads an expiry written exactly as [`format_expiry`] writes it; anything else (an
/// offset, a fraction, lower case) is refused, so that the instant given is the text
/// signed.
pub fn parse_expiry(text: &str) -> Option<DateTime<Utc>> {
    let at = DateTime::parse_from_rfc3339(text).ok()?.with_timezone(&Utc);
    (format_expiry(at) == text).then_some(at)
}

/// The expiry a signer gives a statement made at `now` for an operation whose approval
/// window closes at `window`: when the window closes (no execution may start later), and
/// within a day at most (a minute short of it, for the clocks' sake). `None` once the
/// window has closed: there is nothing left to sign.
pub fn expiry_for(window: DateTime<Utc>, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let expires_at = window.min(now + chrono::Duration::seconds(MAX_STATEMENT_LIFETIME_S - 60));
    (expires_at > now + chrono::Duration::seconds(1)).then(|| truncate_to_seconds(expires_at))
}

/// Whether `expires_at` is an expiry a signer may choose for an approval made at `at`:
/// after it, and at most [`MAX_STATEMENT_LIFETIME_S`] after it.
pub fn expiry_in_bounds(expires_at: DateTime<Utc>, at: DateTime<Utc>) -> bool {
    let lifetime = expires_at.signed_duration_since(at).num_seconds();
    expires_at > at && lifetime <= MAX_STATEMENT_LIFETIME_S
}

#[cfg(test)]
mod tests;
