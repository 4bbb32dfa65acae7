//! An API refusal as a person reads it: the status, the code and the field, and what to
//! do. Read from either body fleet-api answers with: `{"error": {"code", "field"}}` or a
//! problem document (RFC 9457, `type`, `title`, `status`, `detail`, `code`, `field`,
//! `request_id`). Every text the server sent is shown with its invisible characters
//! revealed, so an answer cannot rewrite the terminal.

use std::time::Duration;

use fleet_core::visible::reveal;
use serde_json::Value;

/// One refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What was asked, in words (`reading op_…`, `approve op_…`).
    pub what: String,
    pub status: u16,
    pub code: Option<String>,
    pub field: Option<String>,
    pub detail: Option<String>,
    pub request_id: Option<String>,
    /// `Retry-After`, where the API said when to ask again.
    pub retry_after: Option<Duration>,
}

impl Refusal {
    /// The refusal of `what` answered with `status` and `body` (any JSON, or none).
    pub fn read(what: &str, status: u16, body: &Value, retry_after: Option<Duration>) -> Refusal {
        // The problem document carries its members at the top; the older body under "error".
        let members = body.get("error").filter(|e| e.is_object()).unwrap_or(body);
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
        Refusal {
            what: what.to_owned(),
            status,
            code: text(members, "code"),
            field: text(members, "field"),
            detail: text(body, "detail").or_else(|| text(body, "title")),
            request_id: text(body, "request_id").or_else(|| text(members, "request_id")),
            retry_after,
        }
    }

    /// Whether asking again as it was, after `retry_after`, may get another answer.
    pub fn is_retryable(&self) -> bool {
        matches!(self.status, 429 | 503)
    }

    /// How long to pause before asking again, having waited `waited` already out of
    /// `patience`: the `Retry-After` the API asked for (a second when it said none), or
    /// `None` when asking again cannot help (not a 429 or 503) or would end past the
    /// patience. A 429 or 503 means nothing was decided, so asking again is safe.
    pub fn pause_within(&self, waited: Duration, patience: Duration) -> Option<Duration> {
        if !self.is_retryable() {
            return None;
        }
        let pause = self.retry_after.unwrap_or(Duration::from_secs(1));
        (waited + pause <= patience).then_some(pause)
    }
}

/// The most a decision (`fleetctl approve`, `reject`, …) waits in all for answers that
/// say when to ask again (429, 503 with `Retry-After`) before it gives up and shows the
/// last one.
pub const DECIDE_PATIENCE: Duration = Duration::from_secs(60);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} refused: {}", self.what, self.status)?;
        if let Some(code) = &self.code {
            write!(f, " {}", reveal(code))?;
        }
        if let Some(field) = &self.field {
            write!(f, " (field {})", reveal(field))?;
        }
        let code = self.code.as_deref().unwrap_or("");
        match explain(code, self.field.as_deref()) {
            Some(meaning) => write!(f, ": {meaning}")?,
            None => match &self.detail {
                Some(detail) => write!(f, ": {}", reveal(detail))?,
                None if self.code.is_none() => {
                    f.write_str(": not an answer of fleet-api (is the API URL right?)")?;
                }
                None => f.write_str(": see the API's documentation (docs/api.md)")?,
            },
        }
        if let Some(after) = self.retry_after {
            write!(f, "; try again in {}s", after.as_secs().max(1))?;
        }
        if let Some(id) = &self.request_id {
            write!(f, " [request {}]", reveal(id))?;
        }
        Ok(())
    }
}

impl std::error::Error for Refusal {}

/// What a refusal's code means for the person who typed the command.
pub fn explain(code: &str, field: Option<&str>) -> Option<String> {
    let text = match code {
        "unauthorized" => "the token is missing, unknown or revoked".to_owned(),
        "token_expired" => "the token expired; ask an administrator for a new one (`fleetctl token create`)".to_owned(),
        "role_not_allowed" => "your principal's role may not do this (approvers approve and reject, operators resolve and dispute)".to_owned(),
        "tenant_not_granted" => "your principal (or this token) may not act for that tenant".to_owned(),
        "submitter_cannot_approve" => "your principal submitted this operation; someone else must approve it".to_owned(),
        "not_found" => "no such operation among your tenants (or in the tenant named)".to_owned(),
        "operation_id_ambiguous" => "two of your tenants hold an operation with this id: name one with --tenant".to_owned(),
        "invalid_query" => format!("the API refused the query's {}", field.unwrap_or("parameters")),
        "hash_mismatch" => "the hash is not the stored snapshot's (whatever you approved before); look at `fleetctl show` again".to_owned(),
        "approval_expired" => "the approval window has closed; the agent must submit a new intent".to_owned(),
        "not_pending" => "the operation was rejected or cancelled, or others approved it and it no longer waits for you".to_owned(),
        "already_started" => "execution began or the operation ended; only an operation that has not started can be rejected".to_owned(),
        "not_allowed_in_status" => "the operation's status does not allow this decision (an operator resolves unknown, accepted or disputed operations, or confirms a succeeded one)".to_owned(),
        "changed_meanwhile" => "the operation changed while you decided; look at it again".to_owned(),
        "signature_required" => "this operation's policy asks for signed approvals: approve with --key (or FLEET_SIGNING_KEY) and a key registered for you".to_owned(),
        "signature_invalid" => format!(
            "the signature does not count ({}): is the key registered for your principal (`fleetctl key list`), not removed, and this machine's clock right?",
            field.unwrap_or("signature")
        ),
        "invalid_field" if field == Some("external_id") => {
            "resolving as succeeded needs --external-id, the provider's id of the effect (one visible token)".to_owned()
        }
        "invalid_field" => format!("{} is missing, blank or too long", field.unwrap_or("a value")),
        "too_many_waiters" => "too many requests wait on this API already (yours, your tenant's or everyone's)".to_owned(),
        "rate_limited" => "your principal sent more requests than its rate allows".to_owned(),
        "busy" => "every request slot of the API stayed taken; nothing was done".to_owned(),
        "unavailable" => "the API could not reach Postgres; nothing was done, try again".to_owned(),
        _ => return None,
    };
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_error_bodies_give_the_code_and_field() {
        let old = Refusal::read(
            "approve op_x",
            400,
            &json!({"error": {"code": "signature_invalid", "field": "key_id"}}),
            None,
        );
        let problem = Refusal::read(
            "approve op_x",
            400,
            &json!({"type": "https://fleet.example/problems/signature_invalid", "title": "Bad Request",
                    "status": 400, "detail": "the signature does not verify", "code": "signature_invalid",
                    "field": "key_id", "request_id": "req_1"}),
            None,
        );
        for r in [&old, &problem] {
            assert_eq!(
                (r.code.as_deref(), r.field.as_deref()),
                (Some("signature_invalid"), Some("key_id"))
            );
        }
        assert_eq!(problem.request_id.as_deref(), Some("req_1"));
        let text = problem.to_string();
        assert!(
            text.starts_with("approve op_x refused: 400 signature_invalid (field key_id): the signature does not count (key_id)"),
            "{text}"
        );
        assert!(text.ends_with("[request req_1]"), "{text}");
    }

    #[test]
    fn an_unknown_code_shows_the_detail_and_a_foreign_answer_says_so() {
        let r = Refusal::read(
            "reading op_x",
            418,
            &json!({"code": "teapot", "detail": "short\u{202e}stout"}),
            None,
        );
        let text = r.to_string();
        assert!(text.contains("418 teapot: short"), "{text}");
        assert!(!text.contains('\u{202e}'), "revealed, not printed: {text}");
        let foreign = Refusal::read("reading op_x", 502, &Value::Null, None).to_string();
        assert!(foreign.contains("not an answer of fleet-api"), "{foreign}");
    }

    #[test]
    fn every_code_of_the_routes_fleetctl_calls_is_explained() {
        for code in [
            "unauthorized",
            "token_expired",
            "role_not_allowed",
            "tenant_not_granted",
            "submitter_cannot_approve",
            "not_found",
            "operation_id_ambiguous",
            "invalid_query",
            "hash_mismatch",
            "approval_expired",
            "not_pending",
            "already_started",
            "not_allowed_in_status",
            "changed_meanwhile",
            "signature_required",
            "signature_invalid",
            "invalid_field",
            "too_many_waiters",
            "rate_limited",
            "busy",
            "unavailable",
        ] {
            assert!(explain(code, None).is_some(), "{code}");
        }
        assert!(explain("invalid_field", Some("external_id"))
            .unwrap()
            .contains("--external-id"));
        let retry = Refusal::read(
            "reading op_x",
            429,
            &json!({"error": {"code": "rate_limited", "field": null}}),
            Some(Duration::from_secs(2)),
        );
        assert!(retry.is_retryable());
        assert!(retry.to_string().contains("try again in 2s"), "{retry}");
    }

    #[test]
    fn a_429_or_503_is_asked_again_after_its_retry_after_within_the_patience() {
        let refusal = |status, after: Option<u64>| {
            Refusal::read(
                "approve op",
                status,
                &json!({"code": "x"}),
                after.map(Duration::from_secs),
            )
        };
        let s = Duration::from_secs;
        assert_eq!(refusal(429, Some(3)).pause_within(s(0), s(60)), Some(s(3)));
        assert_eq!(refusal(503, None).pause_within(s(0), s(60)), Some(s(1)));
        assert_eq!(refusal(429, Some(3)).pause_within(s(58), s(60)), None);
        assert_eq!(refusal(409, Some(1)).pause_within(s(0), s(60)), None);
        assert_eq!(refusal(422, None).pause_within(s(0), s(60)), None);
    }
}
