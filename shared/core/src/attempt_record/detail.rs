//! An attempt's detail as a typed value ([`AttemptDetail`]): what execute writes and what
//! reconcile reads back, never compared as free text. The column keeps its text form
//! ([`AttemptDetail::to_text`]), the words operators read on the console and in evidence
//! bundles; [`AttemptDetail::read`] reads it back with the attempt's outcome as its tag
//! (a failed attempt's detail is the provider's error code), and reads every form written
//! before the type existed (the store's own "not sent: …" of a lost claim, free words).

use serde::{Deserialize, Serialize};

use crate::attempt::AttemptOutcome;
use crate::outcome::Precondition;
use crate::reason::Reason;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AttemptDetail {
    /// The provider refused for good: its error code (the attempt failed).
    Refused { code: String },
    /// Why nothing was sent, or why the outcome is not known.
    Because {
        #[serde(with = "reason_code")]
        reason: Reason,
    },
    /// A precondition of the request no longer held, and what holds now.
    Conflict {
        #[serde(with = "precondition_code")]
        on: Precondition,
        current: Option<String>,
    },
    /// The claim stalled between its claim and its call past its lease's trust.
    LeaseLostBeforeCall,
    /// A charge's payer could not be read before the charge.
    PayerLookupFailed,
    /// The search before a create found the effect: no create went out.
    FoundBySearch,
    /// The claim was lost, and its send mark proves nothing was sent.
    NotSent { why: String },
    /// Words for the people who decide next (a payee or payer seen changed), never read
    /// by a rule.
    Words { text: String },
}

const LEASE_LOST_BEFORE_CALL: &str = "lease_lost_before_call";
const PAYER_LOOKUP_FAILED: &str = "payer_lookup_failed";
const FOUND_BY_SEARCH: &str = "found_by_search";
/// What the store writes before the lost claim's reason when its mark proves nothing left.
const NOT_SENT: &str = "not sent: ";
const CURRENT: &str = " current=";
const PRECONDITIONS: [Precondition; 3] = [
    Precondition::Version,
    Precondition::Status,
    Precondition::Payee,
];

impl AttemptDetail {
    /// The column's text.
    pub fn to_text(&self) -> String {
        match self {
            AttemptDetail::Refused { code } => code.clone(),
            AttemptDetail::Because { reason } => reason.as_str().to_owned(),
            AttemptDetail::Conflict { on, current } => format!(
                "{}{CURRENT}{}",
                on.code(),
                current.as_deref().unwrap_or("?")
            ),
            AttemptDetail::LeaseLostBeforeCall => LEASE_LOST_BEFORE_CALL.to_owned(),
            AttemptDetail::PayerLookupFailed => PAYER_LOOKUP_FAILED.to_owned(),
            AttemptDetail::FoundBySearch => FOUND_BY_SEARCH.to_owned(),
            AttemptDetail::NotSent { why } => format!("{NOT_SENT}{why}"),
            AttemptDetail::Words { text } => text.clone(),
        }
    }

    /// The detail an attempt recorded as `outcome` keeps as `text`.
    pub fn read(outcome: Option<AttemptOutcome>, text: &str) -> AttemptDetail {
        if outcome == Some(AttemptOutcome::Failed) {
            return AttemptDetail::Refused {
                code: text.to_owned(),
            };
        }
        if let Some(why) = text.strip_prefix(NOT_SENT) {
            return AttemptDetail::NotSent {
                why: why.to_owned(),
            };
        }
        for on in PRECONDITIONS {
            if let Some(current) = text
                .strip_prefix(on.code())
                .and_then(|rest| rest.strip_prefix(CURRENT))
            {
                let current = (current != "?").then(|| current.to_owned());
                return AttemptDetail::Conflict { on, current };
            }
        }
        match text {
            LEASE_LOST_BEFORE_CALL => AttemptDetail::LeaseLostBeforeCall,
            PAYER_LOOKUP_FAILED => AttemptDetail::PayerLookupFailed,
            FOUND_BY_SEARCH => AttemptDetail::FoundBySearch,
            _ => match Reason::parse(text) {
                Some(reason) => AttemptDetail::Because { reason },
                None => AttemptDetail::Words {
                    text: text.to_owned(),
                },
            },
        }
    }

    /// The provider's error code of a refusal.
    pub fn refusal_code(&self) -> Option<&str> {
        match self {
            AttemptDetail::Refused { code } => Some(code),
            _ => None,
        }
    }

    /// The reason it names, when it names one.
    pub fn reason(&self) -> Option<Reason> {
        match self {
            AttemptDetail::Because { reason } => Some(*reason),
            _ => None,
        }
    }
}

/// A reason as its code (`Reason::as_str`), read back with `Reason::parse`.
mod reason_code {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    use crate::reason::Reason;

    pub fn serialize<S: Serializer>(reason: &Reason, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(reason.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Reason, D::Error> {
        let code = String::deserialize(d)?;
        Reason::parse(&code).ok_or_else(|| D::Error::custom(format!("unknown reason {code:?}")))
    }
}

/// A precondition as its code (`Precondition::code`).
mod precondition_code {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    use super::PRECONDITIONS;
    use crate::outcome::Precondition;

    pub fn serialize<S: Serializer>(on: &Precondition, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(on.code())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Precondition, D::Error> {
        let code = String::deserialize(d)?;
        PRECONDITIONS
            .into_iter()
            .find(|on| on.code() == code)
            .ok_or_else(|| D::Error::custom(format!("unknown precondition {code:?}")))
    }
}

#[cfg(test)]
mod tests;
