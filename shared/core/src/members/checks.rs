//! The checks of intent.v1's members that types cannot state, shared by the envelope's
//! reading and the actions' payloads.

use crate::currency::is_iso_4217;
use crate::identifier::check_identifier;
use crate::intent_error::IntentError;
use crate::intent_limits::{MAX_SAFE_INTEGER, MAX_TEXT_CHARS};

/// Short free text (a deal's name, a reason, a subject): 1 to [`MAX_TEXT_CHARS`]
/// characters, no control characters. Shown to people with its invisible characters
/// revealed ([`crate::visible::reveal`]).
pub(crate) fn check_text(field: &str, value: &str) -> Result<(), IntentError> {
    if value.is_empty() || value.chars().count() > MAX_TEXT_CHARS {
        return Err(IntentError::field(
            field,
            format!("must be 1 to {MAX_TEXT_CHARS} characters"),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(IntentError::field(
            field,
            "must not contain control characters",
        ));
    }
    Ok(())
}

/// An identifier (tenant, provider, versions, target, the payload's ids): 1 to
/// [`MAX_TEXT_CHARS`] characters that satisfy the identifier rule
/// ([`crate::identifier`]: no invisible, directional, whitespace or control characters, one
/// script, not a look-alike of an ASCII id).
pub(crate) fn check_id(field: &str, value: &str) -> Result<(), IntentError> {
    check_text(field, value)?;
    check_identifier(value).map_err(|problem| IntentError::field(field, problem.to_string()))
}

/// `payload.amount_minor` and `payload.currency`: a positive safe integer in an active
/// ISO 4217 currency.
pub(crate) fn check_money(amount_minor: i64, currency: &str) -> Result<(), IntentError> {
    if !(1..=MAX_SAFE_INTEGER).contains(&amount_minor) {
        return Err(IntentError::field(
            "payload.amount_minor",
            format!("must be an integer from 1 to {MAX_SAFE_INTEGER}"),
        ));
    }
    if !is_iso_4217(currency) {
        return Err(IntentError::field(
            "payload.currency",
            "must be an ISO 4217 code such as KZT or USD",
        ));
    }
    Ok(())
}
