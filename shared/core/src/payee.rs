//! Who a payment really goes to: the payee as the provider's directory describes it when
//! the intent is prepared, kept with the operation as evidence (`operations.payee`), shown
//! to the approver and bound to the execution by its version.
//!
//! The evidence never holds an account number: the provider shows a masked form (`KZ••
//! •••• •••• 1234`) and a fingerprint (equal fingerprints: the same account), and only
//! these are kept, logged or shown. Pure: the lookup's answer and its time are inputs.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod name_check;

pub use name_check::{NameCheck, NameResult, NotCheckedWhy};

/// The account a payee is paid to, as the provider shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayeeAccount {
    /// `iban` or `local`.
    pub scheme: String,
    pub masked: String,
    /// `sha256:` + 64 hex digits, the provider's hash of the full account number.
    pub fingerprint: String,
}

/// A payee found in the provider's directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payee {
    pub id: String,
    pub name: String,
    /// ISO 3166-1 alpha-2.
    pub country: String,
    pub account: PayeeAccount,
    pub verified: bool,
    /// Grows by one on every change of name, country or account.
    pub version: i64,
}

/// The longest name or masked account kept: a directory is not trusted to bound them.
const MAX_TEXT_CHARS: usize = 200;

impl Payee {
    /// Reads the provider's answer to a payee lookup; `None` when it is not the documented
    /// shape (a payee the fleet cannot describe is treated as unknown).
    pub fn from_provider(answer: &Value) -> Option<Payee> {
        let account = answer.get("account")?;
        let text = |v: &Value, name: &str| -> Option<String> {
            let s = v.get(name)?.as_str()?;
            (!s.is_empty() && s.chars().count() <= MAX_TEXT_CHARS).then(|| s.to_owned())
        };
        let payee = Payee {
            id: text(answer, "id")?,
            name: text(answer, "name")?,
            country: text(answer, "country")?,
            account: PayeeAccount {
                scheme: text(account, "scheme")?,
                masked: text(account, "masked")?,
                fingerprint: text(account, "fingerprint")?,
            },
            verified: answer.get("verified")?.as_bool()?,
            version: answer.get("version")?.as_i64()?,
        };
        let country_ok =
            payee.country.len() == 2 && payee.country.bytes().all(|b| b.is_ascii_uppercase());
        let fingerprint_ok = payee
            .account
            .fingerprint
            .strip_prefix("sha256:")
            .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
        let scheme_ok = matches!(payee.account.scheme.as_str(), "iban" | "local");
        (country_ok && fingerprint_ok && scheme_ok && payee.version >= 1).then_some(payee)
    }
}

/// Why a payee is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownPayee {
    /// The directory has no payee with this id (404).
    NotFound,
    /// The directory gave no usable answer after a bounded retry.
    LookupFailed,
}

impl UnknownPayee {
    pub fn as_str(self) -> &'static str {
        match self {
            UnknownPayee::NotFound => "not_found",
            UnknownPayee::LookupFailed => "lookup_failed",
        }
    }
}

/// What was found about an operation's payee, and when: `operations.payee`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum PayeeEvidence {
    Found {
        #[serde(flatten)]
        payee: Payee,
        looked_up_at: DateTime<Utc>,
        /// The check of the name the intent gave against the account's holder, made in
        /// the same lookup (`name_check`); absent in evidence kept before names were
        /// checked, and for actions that give no name to check.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name_check: Option<NameCheck>,
    },
    Unknown {
        id: String,
        reason: UnknownPayee,
        looked_up_at: DateTime<Utc>,
    },
}

impl PayeeEvidence {
    /// The evidence of one lookup of `id`: the answer (`Ok(None)`: 404), read at `at`.
    pub fn of_lookup(id: &str, answer: Result<Option<&Value>, ()>, at: DateTime<Utc>) -> Self {
        let unknown = |reason| PayeeEvidence::Unknown {
            id: id.to_owned(),
            reason,
            looked_up_at: at,
        };
        match answer {
            Ok(Some(value)) => match Payee::from_provider(value) {
                Some(payee) if payee.id == id => PayeeEvidence::Found {
                    payee,
                    looked_up_at: at,
                    name_check: None,
                },
                _ => unknown(UnknownPayee::LookupFailed),
            },
            Ok(None) => unknown(UnknownPayee::NotFound),
            Err(()) => unknown(UnknownPayee::LookupFailed),
        }
    }

    pub fn found(&self) -> Option<&Payee> {
        match self {
            PayeeEvidence::Found { payee, .. } => Some(payee),
            PayeeEvidence::Unknown { .. } => None,
        }
    }

    /// The evidence with `check` as its name check; an unknown payee has no account whose
    /// holder could be checked, so it stays as it is.
    pub fn with_name_check(self, check: NameCheck) -> Self {
        match self {
            PayeeEvidence::Found {
                payee,
                looked_up_at,
                ..
            } => PayeeEvidence::Found {
                payee,
                looked_up_at,
                name_check: Some(check),
            },
            unknown => unknown,
        }
    }

    pub fn name_check(&self) -> Option<&NameCheck> {
        match self {
            PayeeEvidence::Found { name_check, .. } => name_check.as_ref(),
            PayeeEvidence::Unknown { .. } => None,
        }
    }

    /// The version a payment is made conditional on: the one the approver was shown.
    pub fn version(&self) -> Option<i64> {
        self.found().map(|p| p.version)
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("evidence serialises")
    }

    pub fn from_json(value: &Value) -> Option<PayeeEvidence> {
        serde_json::from_value(value.clone()).ok()
    }
}

/// The payee member a payload names, for an action that has one.
pub fn payee_id<'a>(payee_member: Option<&str>, payload: &'a Value) -> Option<&'a str> {
    payload.get(payee_member?)?.as_str()
}

#[cfg(test)]
mod tests;
