//! A standing mandate: one approver's signed, bounded, revocable permission that approves
//! routine operations when execute claims them, instead of a person approving each.
//!
//! The statement signed is RFC 8785 canonical JSON (the same canonical form as the payload
//! hash and the approval statement), with the same registered keys as approvals:
//!
//! ```json
//! {"actions":["payment.create"],"budget_minor":3000000,"count_limit":40,"currency":"KZT",
//!  "for_principal":"billing-bot","mandate_id":"md_01JF…","payees":[{"account_fingerprint":
//!  "sha256:…","id":"vendor_77"}],"per_operation_max_minor":150000,"statement":"fleet.mandate.v1",
//!  "tenant_id":"org_482","valid_from":"2026-12-01T00:00:00Z","valid_until":"2027-01-01T00:00:00Z"}
//! ```
//!
//! `payees` is either a list of payee ids each with the account fingerprint the signer was
//! shown (a payee whose account changed since is not covered), or `"any_verified"`: any
//! payee the provider's directory verified at intake. The database derives every limit it
//! enforces from this statement, never from columns set beside it
//! (`migrations/0061_mandates.sql`). Pure: the clock is an input.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::approval_statement::{format_expiry, parse_expiry};
use crate::catalogue::Action;
use crate::currency::is_iso_4217;
use crate::hash::canonical_json;
use crate::identifier::is_identifier;
use crate::intent::MAX_SAFE_INTEGER;
use crate::money::format_amount;
use crate::visible::reveal;
use crate::wording::quote;

/// The statement's version: a verifier that meets another refuses it.
pub const MANDATE_STATEMENT: &str = "fleet.mandate.v1";

/// The most payees one mandate may name, and actions it may cover.
pub const MAX_PAYEES: usize = 200;
const MAX_ACTIONS: usize = 8;

/// The longest a mandate may stand: a standing order is still reviewed once a year.
pub const MAX_VALIDITY_DAYS: i64 = 366;

/// Whom a mandate may pay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MandatePayees {
    /// Any payee the provider's directory verified at intake.
    AnyVerified,
    /// These payees, each only while its account is the one with this fingerprint.
    Listed(Vec<MandatePayee>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MandatePayee {
    pub id: String,
    /// `sha256:` + 64 hex digits, as the directory shows it (`operations.payee`).
    pub account_fingerprint: String,
}

/// A mandate's statement, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mandate {
    pub mandate_id: String,
    pub tenant_id: String,
    pub actions: Vec<Action>,
    pub payees: MandatePayees,
    pub currency: String,
    pub per_operation_max_minor: i64,
    pub budget_minor: i64,
    pub count_limit: i64,
    pub valid_from: DateTime<Utc>,
    pub valid_until: DateTime<Utc>,
    /// The principal (an agent) whose intents it covers; `None`: anyone's in the tenant.
    pub for_principal: Option<String>,
}

/// Why a statement is not a mandate, naming the member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MandateProblem {
    pub field: &'static str,
    pub problem: String,
}

impl std::fmt::Display for MandateProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.problem)
    }
}

fn problem(field: &'static str, text: impl Into<String>) -> MandateProblem {
    MandateProblem {
        field,
        problem: text.into(),
    }
}

/// Whether `action` may be covered by a mandate: it has an amount and a payee the
/// directory describes, the two things a mandate bounds.
pub fn may_be_mandated(action: Action) -> bool {
    let spec = action.spec();
    spec.has_amount && spec.payee.is_some()
}

fn is_fingerprint(s: &str) -> bool {
    s.strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn is_mandate_id(s: &str) -> bool {
    s.strip_prefix("md_").is_some_and(|u| {
        u.len() == 26
            && u.bytes()
                .all(|b| b.is_ascii_digit() || (b.is_ascii_uppercase() && !b"ILOU".contains(&b)))
    })
}

impl Mandate {
    /// Reads a statement as signed; every member is required (`for_principal` may be
    /// `null`) and nothing else is allowed, so what is stored is exactly what was signed.
    pub fn from_json(v: &Value) -> Result<Mandate, MandateProblem> {
        let obj = v
            .as_object()
            .ok_or_else(|| problem("statement", "not a JSON object"))?;
        const MEMBERS: [&str; 12] = [
            "statement",
            "mandate_id",
            "tenant_id",
            "actions",
            "payees",
            "currency",
            "per_operation_max_minor",
            "budget_minor",
            "count_limit",
            "valid_from",
            "valid_until",
            "for_principal",
        ];
        if let Some(extra) = obj.keys().find(|k| !MEMBERS.contains(&k.as_str())) {
            return Err(problem("statement", format!("unknown member {extra:?}")));
        }
        if v.get("statement").and_then(Value::as_str) != Some(MANDATE_STATEMENT) {
            return Err(problem(
                "statement",
                format!("must be {MANDATE_STATEMENT:?}"),
            ));
        }
        let text = |field: &'static str| -> Result<String, MandateProblem> {
            v.get(field)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| problem(field, "a string is required"))
        };
        let positive = |field: &'static str| -> Result<i64, MandateProblem> {
            v.get(field)
                .and_then(Value::as_i64)
                .filter(|n| (1..=MAX_SAFE_INTEGER).contains(n))
                .ok_or_else(|| problem(field, format!("an integer 1 to {MAX_SAFE_INTEGER}")))
        };
        let instant = |field: &'static str| -> Result<DateTime<Utc>, MandateProblem> {
            parse_expiry(&text(field)?)
                .ok_or_else(|| problem(field, "RFC 3339 UTC, whole seconds, Z"))
        };
        let mandate_id = text("mandate_id")?;
        if !is_mandate_id(&mandate_id) {
            return Err(problem("mandate_id", "md_ + a ULID"));
        }
        let tenant_id = text("tenant_id")?;
        if !is_identifier(&tenant_id) {
            return Err(problem("tenant_id", "not an identifier"));
        }
        let names = v
            .get("actions")
            .and_then(Value::as_array)
            .filter(|a| (1..=MAX_ACTIONS).contains(&a.len()))
            .ok_or_else(|| problem("actions", format!("1 to {MAX_ACTIONS} actions")))?;
        let mut actions = Vec::new();
        for name in names {
            let action = name
                .as_str()
                .and_then(Action::parse)
                .filter(|a| may_be_mandated(*a))
                .ok_or_else(|| {
                    problem(
                        "actions",
                        format!("{name} is no action with an amount and a payee"),
                    )
                })?;
            if actions.contains(&action) {
                return Err(problem("actions", "an action named twice"));
            }
            actions.push(action);
        }
        let payees = match v.get("payees") {
            Some(Value::String(s)) if s == "any_verified" => MandatePayees::AnyVerified,
            Some(Value::Array(list)) if (1..=MAX_PAYEES).contains(&list.len()) => {
                let mut payees: Vec<MandatePayee> = Vec::new();
                for p in list {
                    let id = p
                        .get("id")
                        .and_then(Value::as_str)
                        .filter(|s| is_identifier(s));
                    let fp = p
                        .get("account_fingerprint")
                        .and_then(Value::as_str)
                        .filter(|s| is_fingerprint(s));
                    let only_two = p.as_object().is_some_and(|o| o.len() == 2);
                    let (Some(id), Some(fp), true) = (id, fp, only_two) else {
                        return Err(problem(
                            "payees",
                            "each payee is {\"id\", \"account_fingerprint\": \"sha256:…\"}",
                        ));
                    };
                    if payees.iter().any(|q| q.id == id) {
                        return Err(problem("payees", format!("{id} named twice")));
                    }
                    payees.push(MandatePayee {
                        id: id.to_owned(),
                        account_fingerprint: fp.to_owned(),
                    });
                }
                MandatePayees::Listed(payees)
            }
            _ => {
                return Err(problem(
                    "payees",
                    format!("\"any_verified\" or a list of 1 to {MAX_PAYEES} payees"),
                ))
            }
        };
        let currency = text("currency")?;
        if !is_iso_4217(&currency) {
            return Err(problem("currency", "not an ISO 4217 code"));
        }
        let per_operation_max_minor = positive("per_operation_max_minor")?;
        let budget_minor = positive("budget_minor")?;
        if per_operation_max_minor > budget_minor {
            return Err(problem(
                "per_operation_max_minor",
                "more than the whole budget",
            ));
        }
        let count_limit = positive("count_limit")?;
        if count_limit > i64::from(i32::MAX) {
            return Err(problem("count_limit", "too large"));
        }
        let valid_from = instant("valid_from")?;
        let valid_until = instant("valid_until")?;
        if valid_until <= valid_from
            || valid_until - valid_from > chrono::Duration::days(MAX_VALIDITY_DAYS)
        {
            return Err(problem(
                "valid_until",
                format!("after valid_from, at most {MAX_VALIDITY_DAYS} days later"),
            ));
        }
        let for_principal = match v.get("for_principal") {
            Some(Value::Null) => None,
            Some(Value::String(s)) if is_identifier(s) => Some(s.clone()),
            _ => return Err(problem("for_principal", "a principal's name or null")),
        };
        Ok(Mandate {
            mandate_id,
            tenant_id,
            actions,
            payees,
            currency,
            per_operation_max_minor,
            budget_minor,
            count_limit,
            valid_from,
            valid_until,
            for_principal,
        })
    }

    pub fn to_json(&self) -> Value {
        let payees = match &self.payees {
            MandatePayees::AnyVerified => json!("any_verified"),
            MandatePayees::Listed(list) => Value::Array(
                list.iter()
                    .map(|p| json!({"id": p.id, "account_fingerprint": p.account_fingerprint}))
                    .collect(),
            ),
        };
        json!({
            "statement": MANDATE_STATEMENT,
            "mandate_id": self.mandate_id,
            "tenant_id": self.tenant_id,
            "actions": self.actions.iter().map(|a| a.wire_name()).collect::<Vec<_>>(),
            "payees": payees,
            "currency": self.currency,
            "per_operation_max_minor": self.per_operation_max_minor,
            "budget_minor": self.budget_minor,
            "count_limit": self.count_limit,
            "valid_from": format_expiry(self.valid_from),
            "valid_until": format_expiry(self.valid_until),
            "for_principal": self.for_principal,
        })
    }

    /// The bytes signed: RFC 8785 canonical JSON, UTF-8.
    pub fn to_bytes(&self) -> Vec<u8> {
        canonical_json(&self.to_json()).into_bytes()
    }

    /// `sha256:` + the hex SHA-256 of [`Mandate::to_bytes`]: the mandate's hash.
    pub fn hash(&self) -> String {
        format!("sha256:{}", hex::encode(Sha256::digest(self.to_bytes())))
    }

    fn amount(&self, minor: i64) -> String {
        format_amount(minor, &self.currency).unwrap_or_else(|| format!("{minor} {}", self.currency))
    }

    /// The mandate in words, one fact a line, as the signer is shown it before signing.
    pub fn to_words(&self) -> String {
        let actions: Vec<&str> = self.actions.iter().map(|a| a.wire_name()).collect();
        let payees = match &self.payees {
            MandatePayees::AnyVerified => "any payee the provider's directory verified".to_owned(),
            MandatePayees::Listed(list) => list
                .iter()
                .map(|p| {
                    format!(
                        "{} (account {})",
                        quote(&reveal(&p.id)),
                        p.account_fingerprint
                    )
                })
                .collect::<Vec<_>>()
                .join(", "),
        };
        let whose = self
            .for_principal
            .as_deref()
            .map_or("anyone's in the tenant".to_owned(), |p| quote(&reveal(p)));
        format!(
            "Standing mandate {id} for tenant {tenant}\n\
             approves: {actions}\n\
             to: {payees}\n\
             each at most {per_op}, in all at most {budget}, at most {count} operations\n\
             valid from {from} until {until}\n\
             intents of: {whose}\n\
             hash: {hash}\n",
            id = self.mandate_id,
            tenant = quote(&reveal(&self.tenant_id)),
            actions = actions.join(", "),
            per_op = self.amount(self.per_operation_max_minor),
            budget = self.amount(self.budget_minor),
            count = self.count_limit,
            from = format_expiry(self.valid_from),
            until = format_expiry(self.valid_until),
            hash = self.hash(),
        )
    }

    /// Whether the mandate stands at `now` by its window alone.
    pub fn in_window(&self, now: DateTime<Utc>) -> bool {
        self.valid_from <= now && now < self.valid_until
    }
}

/// What is left of a mandate, as its row says: spent (claimed operations), what
/// remains, and whether what remains is revoked rather than available.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MandateStanding {
    pub budget_minor: i64,
    pub spent_minor: i64,
    pub count_limit: i64,
    pub used_count: i64,
    pub revoked: bool,
}

impl MandateStanding {
    /// The budget left to approve with: none once revoked.
    pub fn available_minor(self) -> i64 {
        if self.revoked {
            0
        } else {
            self.budget_minor - self.spent_minor
        }
    }

    /// The budget a revocation took away (never spent).
    pub fn revoked_minor(self) -> i64 {
        if self.revoked {
            self.budget_minor - self.spent_minor
        } else {
            0
        }
    }
}

/// The operation a mandate is judged against, from execute's own copy of its row.
#[derive(Debug, Clone, Copy)]
pub struct MandatedOperation<'a> {
    pub tenant_id: &'a str,
    pub action: Action,
    pub payload: &'a Value,
    /// The payee evidence kept at intake (`operations.payee`).
    pub payee: Option<&'a Value>,
    pub submitted_by: Option<&'a str>,
}

/// Why a mandate's approval of an operation does not hold before its call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MandateRefusal {
    /// The stored statement is no mandate this build reads.
    Unreadable,
    /// The key is not registered for the signer, or was registered after the mandate.
    NotTheSignersKey,
    /// The key was removed since.
    KeyRemoved,
    /// The signature does not verify over the statement's canonical bytes.
    BadSignature,
    /// What was signed does not cover this operation.
    NotCovered,
}

impl MandateRefusal {
    pub fn code(self) -> &'static str {
        match self {
            MandateRefusal::Unreadable => "mandate_unreadable",
            MandateRefusal::NotTheSignersKey => "not_the_signers_key",
            MandateRefusal::KeyRemoved => "key_removed",
            MandateRefusal::BadSignature => "bad_signature",
            MandateRefusal::NotCovered => "not_covered",
        }
    }
}

impl Mandate {
    /// Whether what was signed covers `op` (its window, budget and count are the
    /// database's to judge at claim, on the row as it was then): no check of
    /// [`Mandate::first_gap`] fails, with the payee as intake's lookup found it.
    pub fn covers(&self, op: &MandatedOperation<'_>) -> bool {
        let found = op
            .payee
            .and_then(crate::payee::PayeeEvidence::from_json)
            .and_then(|e| e.found().cloned());
        let payee = match &found {
            Some(p) => coverage::PayeeFacts::Found {
                id: &p.id,
                fingerprint: &p.account.fingerprint,
                verified: p.verified,
            },
            None => coverage::PayeeFacts::Unknown,
        };
        let subject = coverage::Subject {
            tenant_id: op.tenant_id,
            action: op.action,
            amount_minor: op.payload.get("amount_minor").and_then(Value::as_i64),
            currency: op.payload.get("currency").and_then(Value::as_str),
            submitted_by: op.submitted_by,
            payee,
        };
        self.first_gap(&subject).is_none()
    }
}

/// Execute's last check of an operation approved by a mandate, before its call: the
/// statement stored reads as a mandate covering the operation, and `signature` over its
/// canonical bytes verifies with `key`, the signer's, registered before the mandate was
/// stored (`stored_at`) and not removed since. The database cannot verify signatures; a
/// mandate written without its signer's key is refused here, before anything is sent.
pub fn check_mandate(
    statement: &Value,
    signed_by: &str,
    stored_at: DateTime<Utc>,
    signature: &crate::signing::Signature,
    key: Option<&crate::signed_quorum::RegisteredKey>,
    op: &MandatedOperation<'_>,
) -> Result<Mandate, MandateRefusal> {
    let mandate = Mandate::from_json(statement).map_err(|_| MandateRefusal::Unreadable)?;
    let key = key
        .filter(|k| k.principal == signed_by && k.registered_at < stored_at)
        .ok_or(MandateRefusal::NotTheSignersKey)?;
    if key.removed_at.is_some() {
        return Err(MandateRefusal::KeyRemoved);
    }
    if !key
        .public_key
        .verifies(canonical_json(statement).as_bytes(), signature)
    {
        return Err(MandateRefusal::BadSignature);
    }
    if !mandate.covers(op) {
        return Err(MandateRefusal::NotCovered);
    }
    Ok(mandate)
}

pub mod coverage;

#[cfg(test)]
mod tests;
