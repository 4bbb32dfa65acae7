//! The rest of what an approval page says in words: statuses, the absolute deadline, a
//! patched amount with its currency, and the step-up check of an amount a person typed.
//! Pure: statuses, times and typed text are inputs.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::approval::ApprovalStatus;
use crate::json_words::value_in_words;
use crate::money::format_amount;
use crate::reason::Reason;
use crate::state::Status;

/// An operation's state as a person reads it, from its status, its approval status and
/// whether a person must decide: "Waiting for approval", "Outcome unknown: being
/// reconciled", "Succeeded".
pub fn status_in_words(status: Status, approval: ApprovalStatus, escalated: bool) -> &'static str {
    if escalated && !status.is_final() {
        return "Needs an operator";
    }
    match (status, approval) {
        (Status::NotStarted, ApprovalStatus::Pending) => "Waiting for approval",
        (Status::NotStarted, ApprovalStatus::Approved) => "Approved, about to run",
        (Status::NotStarted, ApprovalStatus::Rejected | ApprovalStatus::Expired) => {
            "Not started: it will not run"
        }
        (Status::InProgress, _) => "Being executed",
        (Status::Accepted, _) => "Accepted by the provider, final answer pending",
        (Status::Unknown, _) => "Outcome unknown: being reconciled",
        (Status::Succeeded, _) => "Succeeded",
        (Status::Failed, _) => "Failed",
        (Status::Cancelled, ApprovalStatus::Rejected) => "Rejected",
        (Status::Cancelled, ApprovalStatus::Expired) => "Cancelled: nobody approved in time",
        (Status::Cancelled, _) => "Cancelled",
        (Status::Disputed, _) => "Disputed: an operator is investigating",
    }
}

/// Why an operation is where it is, as the console and fleetctl say it: the reason in
/// words, then its name as the API, the events and the logs carry it ("nobody approved
/// it in time (approval_expired)"), so a person can search for what they read.
pub fn reason_in_words(reason: Reason) -> String {
    match reason {
        Reason::Http(status) => {
            format!("the provider answered HTTP {status} and nothing more ({reason})")
        }
        Reason::HttpReplayed(status) => {
            format!("the provider replayed a saved HTTP {status} for its key ({reason})")
        }
        _ => format!("{} ({reason})", reason.words()),
    }
}

/// A reason as an API answer carries it (text): in words when this build names it,
/// as it came otherwise (a newer server may know a reason this client does not).
pub fn reason_name_in_words(name: &str) -> String {
    Reason::parse(name).map_or_else(|| name.to_owned(), reason_in_words)
}

/// The approval status in words.
pub fn approval_in_words(approval: ApprovalStatus) -> &'static str {
    match approval {
        ApprovalStatus::Pending => "approval pending",
        ApprovalStatus::Approved => "approved",
        ApprovalStatus::Rejected => "rejected",
        ApprovalStatus::Expired => "approval expired",
    }
}

/// An instant as the page states a deadline: "19:54 UTC on 1 Dec 2026".
pub fn instant_in_words(at: DateTime<Utc>) -> String {
    at.format("%H:%M UTC on %-d %b %Y").to_string()
}

/// A patched member's value as a person reads it: an amount in minor units (a member
/// named `amount_minor` or ending in `_amount_minor`) with `currency` in major units and
/// its code ("6,500.00 KZT"); anything else as [`value_in_words`].
pub fn patch_value_in_words(field: &str, value: &Value, currency: Option<&str>) -> String {
    let is_amount = field == "amount_minor" || field.ends_with("_amount_minor");
    match (is_amount, value.as_i64(), currency) {
        (true, Some(minor), Some(code)) => {
            format_amount(minor, code).unwrap_or_else(|| value_in_words(value))
        }
        _ => value_in_words(value),
    }
}

/// The name a patched member is shown under: `amount_minor` is the amount.
pub fn patch_field_in_words(field: &str) -> String {
    match field.strip_suffix("amount_minor") {
        Some("") => "amount".to_owned(),
        Some(prefix) => format!("{}amount", prefix),
        None => field.to_owned(),
    }
}

/// Whether `typed` is the amount `amount_minor` of `code`, as a person re-types it to
/// confirm a large approval: digits with or without thousands separators (commas, spaces,
/// apostrophes) and with or without the currency's decimals, the code optional
/// ("1,500,000.00 KZT", "1500000", "1 500 000.00"). Another amount, another currency, or
/// more decimals than the currency has is not it.
pub fn amount_confirmed(typed: &str, amount_minor: i64, code: &str) -> bool {
    crate::money::amount_minor(typed, code) == Some(amount_minor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn statuses_read_as_words() {
        use ApprovalStatus as A;
        assert_eq!(
            status_in_words(Status::NotStarted, A::Pending, false),
            "Waiting for approval"
        );
        assert_eq!(
            status_in_words(Status::Unknown, A::Approved, true),
            "Needs an operator"
        );
        assert_eq!(
            status_in_words(Status::Succeeded, A::Approved, true),
            "Succeeded",
            "a settled operation is no longer an operator's"
        );
        assert_eq!(
            status_in_words(Status::Cancelled, A::Rejected, false),
            "Rejected"
        );
        for s in Status::ALL {
            for a in A::ALL {
                assert!(!status_in_words(s, a, false).contains('_'));
            }
        }
        assert_eq!(approval_in_words(A::Expired), "approval expired");
    }

    #[test]
    fn a_deadline_is_a_time_of_day_and_a_date() {
        let at = DateTime::parse_from_rfc3339("2026-12-01T19:54:26Z")
            .unwrap()
            .to_utc();
        assert_eq!(instant_in_words(at), "19:54 UTC on 1 Dec 2026");
    }

    #[test]
    fn a_patched_amount_reads_in_its_currency() {
        assert_eq!(
            patch_value_in_words("amount_minor", &json!(650000), Some("KZT")),
            "6,500.00 KZT"
        );
        assert_eq!(
            patch_value_in_words("amount_minor", &json!(650000), None),
            "650000"
        );
        assert_eq!(
            patch_value_in_words("stage", &json!("won"), Some("KZT")),
            "\"won\""
        );
        assert_eq!(patch_field_in_words("amount_minor"), "amount");
        assert_eq!(patch_field_in_words("fee_amount_minor"), "fee_amount");
        assert_eq!(patch_field_in_words("stage"), "stage");
    }

    #[test]
    fn a_retyped_amount_confirms_only_that_amount() {
        for typed in [
            "1,500,000.00 KZT",
            "1500000",
            "1 500 000.00",
            "1500000.0",
            "KZT 1,500,000",
            " 1'500'000.00 ",
        ] {
            assert!(amount_confirmed(typed, 150_000_000, "KZT"), "{typed:?}");
        }
        for typed in [
            "150000000",
            "1,500,000.001",
            "1,500,001.00 KZT",
            "",
            "KZT",
            "1.5e6",
            "-1500000",
            "1,500,000.00 USD",
        ] {
            assert!(!amount_confirmed(typed, 150_000_000, "KZT"), "{typed:?}");
        }
        assert!(amount_confirmed("1,250,000", 1_250_000, "JPY"));
        assert!(!amount_confirmed("1,250,000.5", 1_250_000, "JPY"));
        assert!(amount_confirmed("1.250", 1_250, "KWD"));
    }

    #[test]
    fn a_reason_is_said_in_words_with_its_name() {
        assert_eq!(
            reason_in_words(Reason::ApprovalExpired),
            "nobody approved it in time (approval_expired)"
        );
        assert_eq!(
            reason_in_words(Reason::Http(503)),
            "the provider answered HTTP 503 and nothing more (http_503)"
        );
        assert_eq!(
            reason_name_in_words("lookup_failed_repeatedly"),
            "lookups kept failing (lookup_failed_repeatedly)"
        );
        assert_eq!(reason_name_in_words("a_newer_reason"), "a_newer_reason");
    }
}
