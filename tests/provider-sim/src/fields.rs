//! Validation of create-request bodies, field by field, into typed values.
//!
//! Failures are 400 `invalid_request` and are never saved under the idempotency key.
//! Unknown members are refused (`parameter_unknown`, as Stripe): an adapter that sends a
//! field the contract does not have is a bug a test should see, not something to ignore.

use serde_json::{Map, Value};

use crate::api_error::ApiError;

/// Longest accepted identifier or free-text field, in characters.
const MAX_TEXT_CHARS: usize = 255;

pub struct Fields<'a>(&'a Map<String, Value>);

impl<'a> Fields<'a> {
    /// The body as an object whose members are all in `allowed`.
    pub fn of(body: &'a Value, allowed: &[&'static str]) -> Result<Self, ApiError> {
        let members = body.as_object().ok_or_else(ApiError::invalid_json)?;
        if let Some(unknown) = members
            .keys()
            .find(|name| !allowed.contains(&name.as_str()))
        {
            return Err(ApiError::invalid("parameter_unknown", unknown));
        }
        Ok(Self(members))
    }

    fn required(&self, name: &'static str) -> Result<&'a Value, ApiError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Err(ApiError::invalid("parameter_missing", name)),
            Some(value) => Ok(value),
        }
    }

    /// A non-empty string of at most `MAX_TEXT_CHARS` characters.
    pub fn text(&self, name: &'static str) -> Result<String, ApiError> {
        let text = self
            .required(name)?
            .as_str()
            .ok_or_else(|| ApiError::invalid("parameter_invalid", name))?;
        if text.is_empty() || text.chars().count() > MAX_TEXT_CHARS {
            return Err(ApiError::invalid("parameter_invalid", name));
        }
        Ok(text.to_owned())
    }

    /// An amount in minor units: an integer above zero. A float is refused even when it
    /// is whole, because money is never a float on this wire.
    pub fn amount(&self, name: &'static str) -> Result<i64, ApiError> {
        let value = self.required(name)?;
        let amount = match value {
            Value::Number(n) if n.is_i64() || n.is_u64() => n.as_i64(),
            _ => return Err(ApiError::invalid("parameter_invalid_integer", name)),
        };
        match amount {
            Some(amount) if amount > 0 => Ok(amount),
            Some(_) => Err(ApiError::invalid("amount_too_small", name)),
            None => Err(ApiError::invalid("amount_too_large", name)),
        }
    }

    /// An optional version: absent (or null) is `None`, else an integer of at least 1.
    pub fn optional_version(&self, name: &'static str) -> Result<Option<i64>, ApiError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(version) if version >= 1 => Ok(Some(version)),
                _ => Err(ApiError::invalid("parameter_invalid", name)),
            },
            Some(_) => Err(ApiError::invalid("parameter_invalid_integer", name)),
        }
    }

    /// An ISO 4217 code: three upper-case ASCII letters.
    pub fn currency(&self, name: &'static str) -> Result<String, ApiError> {
        let code = self
            .required(name)?
            .as_str()
            .ok_or_else(|| ApiError::invalid("invalid_currency", name))?;
        if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(ApiError::invalid("invalid_currency", name));
        }
        Ok(code.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const ALLOWED: &[&str] = &["amount_minor", "currency", "name"];

    fn code<T: std::fmt::Debug>(result: Result<T, ApiError>) -> &'static str {
        result.unwrap_err().code
    }

    #[test]
    fn unknown_members_are_named() {
        let error = Fields::of(&json!({"x": 1}), ALLOWED).err().unwrap();
        assert_eq!(error.param.as_deref(), Some("x"));
    }

    #[test]
    fn refuses_non_objects_and_unknown_members() {
        assert_eq!(
            code(Fields::of(&json!([1]), ALLOWED).map(|_| ())),
            "invalid_json"
        );
        assert_eq!(
            code(Fields::of(&json!({"x": 1}), ALLOWED).map(|_| ())),
            "parameter_unknown"
        );
    }

    #[test]
    fn amounts_are_positive_integers_only() {
        let check = |v: Value| {
            let body = json!({ "amount_minor": v });
            Fields::of(&body, ALLOWED).and_then(|f| f.amount("amount_minor"))
        };
        assert_eq!(check(json!(1250000)), Ok(1_250_000));
        assert_eq!(code(check(json!(0))), "amount_too_small");
        assert_eq!(code(check(json!(-5))), "amount_too_small");
        assert_eq!(code(check(json!(10.0))), "parameter_invalid_integer");
        assert_eq!(code(check(json!("10"))), "parameter_invalid_integer");
        assert_eq!(code(check(json!(u64::MAX))), "amount_too_large");
        assert_eq!(code(check(Value::Null)), "parameter_missing");
    }

    #[test]
    fn currencies_are_three_upper_case_letters() {
        let check = |v: Value| {
            let body = json!({ "currency": v });
            Fields::of(&body, ALLOWED).and_then(|f| f.currency("currency"))
        };
        assert_eq!(check(json!("KZT")), Ok("KZT".to_owned()));
        for bad in [json!("kzt"), json!("KZTT"), json!("K1T"), json!(3)] {
            assert_eq!(code(check(bad)), "invalid_currency");
        }
    }

    #[test]
    fn texts_are_non_empty_and_bounded() {
        let check = |v: Value| {
            let body = json!({ "name": v });
            Fields::of(&body, ALLOWED).and_then(|f| f.text("name"))
        };
        assert_eq!(check(json!("vendor_77")), Ok("vendor_77".to_owned()));
        assert_eq!(code(check(json!(""))), "parameter_invalid");
        assert_eq!(code(check(json!("x".repeat(256)))), "parameter_invalid");
        assert_eq!(code(check(json!(7))), "parameter_invalid");
        assert_eq!(
            code(Fields::of(&json!({}), ALLOWED).and_then(|f| f.text("name"))),
            "parameter_missing"
        );
    }
}
