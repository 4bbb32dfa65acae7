//! A provider's rate limit, as its answers state it and as fleet keeps to it.
//!
//! A `429 Too Many Requests` is a refusal in front of the provider: nothing ran and
//! nothing was saved under the idempotency key (`outcome::classify_*` make it
//! `NotExecuted`). So the same request may be sent again, once the wait the provider asked
//! for (`Retry-After`, in seconds or as an HTTP date) has passed. That wait is bounded
//! here, so that no answer can park a worker for long.
//!
//! Every replica of execute and reconcile takes its provider's slots from one schedule in
//! Postgres (`migrations/0052_provider_rates.sql`, docs/design.md#provider-rates): slots
//! spaced `1 / (rate × factor)` apart, a pause every replica honours after a 429, and a
//! factor a 429 lowers and time restores. The arithmetic runs in that one SQL statement
//! (it must be atomic across replicas); its tuning is [`BACKOFF`], and the rules a worker
//! applies to one answer are the functions below.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::outcome::CallResult;

/// The wait assumed for a 429 that names none (or names one that cannot be read).
pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// The longest wait any single answer may impose. A provider asking for more is waited
/// for this long, then asked again (and may say the same).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// How the shared schedule reacts to 429s: the factor the rate is multiplied by is cut by
/// `cut` (at most once per pause: the 429s answered during a pause were all sent before
/// it), never below `floor`, and grows back by `recovery_per_s` each second since the
/// last cut, to 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    pub cut: f64,
    pub floor: f64,
    pub recovery_per_s: f64,
}

/// Half the rate at the first 429, a tenth at the most, back to the full rate within
/// about ten seconds of the last 429 (from a half).
pub const BACKOFF: Backoff = Backoff {
    cut: 0.5,
    floor: 0.1,
    recovery_per_s: 0.05,
};

impl Backoff {
    /// The factor `since_cut` after a cut left it at `factor` (pure: the SQL function
    /// computes the same, and this is what its tests and the documentation refer to).
    pub fn recovered(self, factor: f64, since_cut: Duration) -> f64 {
        (factor + self.recovery_per_s * since_cut.as_secs_f64()).min(1.0)
    }

    /// The factor after a 429 that finds it at `now_factor`.
    pub fn lowered(self, now_factor: f64) -> f64 {
        (now_factor * self.cut).max(self.floor)
    }
}

/// The wait a `Retry-After` value asks for, read at `now`: whole seconds, or an HTTP date
/// (`Sun, 06 Nov 1994 08:49:37 GMT`). Absent or unreadable: [`DEFAULT_RETRY_AFTER`]. A date
/// in the past asks for no wait; anything longer than [`MAX_RETRY_AFTER`] is cut to it.
pub fn retry_after(value: Option<&str>, now: DateTime<Utc>) -> Duration {
    let Some(value) = value.map(str::trim) else {
        return DEFAULT_RETRY_AFTER;
    };
    let asked = if let Ok(seconds) = value.parse::<u64>() {
        Duration::from_secs(seconds)
    } else if let Ok(at) = DateTime::parse_from_rfc2822(value) {
        (at.with_timezone(&Utc) - now)
            .to_std()
            .unwrap_or(Duration::ZERO)
    } else {
        DEFAULT_RETRY_AFTER
    };
    asked.min(MAX_RETRY_AFTER)
}

/// The wait a call's answer asks for when it is a 429; `None` for any other result.
pub fn throttled(call: &CallResult) -> Option<Duration> {
    match call {
        CallResult::Answer(answer) if answer.status == 429 => {
            Some(answer.retry_after.unwrap_or(DEFAULT_RETRY_AFTER))
        }
        CallResult::Answer(_) | CallResult::NotSent { .. } | CallResult::NoAnswer { .. } => None,
    }
}

/// After a 429 within a claim: the wait before the same request goes again, or `None`
/// when the claim has been throttled long enough (`throttled_for` so far, `retry_after`
/// more would pass `patience`) and is better released for a later one. Only a 429 comes
/// here; every other answer is recorded as it always is.
pub fn resend_after(
    throttled_for: Duration,
    retry_after: Duration,
    patience: Duration,
) -> Option<Duration> {
    (throttled_for + retry_after <= patience).then_some(retry_after)
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::outcome::ProviderAnswer;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap()
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates_and_is_bounded() {
        assert_eq!(retry_after(Some("3"), now()), Duration::from_secs(3));
        assert_eq!(retry_after(Some(" 0 "), now()), Duration::ZERO);
        assert_eq!(
            retry_after(Some("Sun, 01 Mar 2026 12:00:05 GMT"), now()),
            Duration::from_secs(5)
        );
        // A date already past: send again now.
        assert_eq!(
            retry_after(Some("Sun, 01 Mar 2026 11:59:00 GMT"), now()),
            Duration::ZERO
        );
        assert_eq!(retry_after(Some("86400"), now()), MAX_RETRY_AFTER);
        assert_eq!(
            retry_after(Some("Mon, 02 Mar 2026 12:00:00 GMT"), now()),
            MAX_RETRY_AFTER
        );
        for unreadable in [None, Some(""), Some("-1"), Some("soon"), Some("1.5")] {
            assert_eq!(retry_after(unreadable, now()), DEFAULT_RETRY_AFTER);
        }
    }

    fn answer(status: u16, retry_after: Option<Duration>) -> CallResult {
        CallResult::Answer(ProviderAnswer {
            status,
            replayed: false,
            request_id: None,
            retry_after,
            should_retry: None,
            body: serde_json::Value::Null,
        })
    }

    #[test]
    fn only_a_429_is_throttled() {
        assert_eq!(
            throttled(&answer(429, Some(Duration::from_secs(2)))),
            Some(Duration::from_secs(2))
        );
        assert_eq!(throttled(&answer(429, None)), Some(DEFAULT_RETRY_AFTER));
        for status in [200, 201, 400, 402, 409, 500, 503] {
            assert_eq!(
                throttled(&answer(status, Some(Duration::from_secs(1)))),
                None
            );
        }
        assert_eq!(
            throttled(&CallResult::NotSent {
                detail: "connect".into()
            }),
            None
        );
        assert_eq!(
            throttled(&CallResult::NoAnswer {
                kind: crate::outcome::NoAnswerKind::Timeout
            }),
            None
        );
    }

    #[test]
    fn a_claim_is_resent_until_its_patience_is_spent() {
        let patience = Duration::from_secs(20);
        let second = Duration::from_secs(1);
        assert_eq!(resend_after(Duration::ZERO, second, patience), Some(second));
        assert_eq!(
            resend_after(Duration::from_secs(19), second, patience),
            Some(second)
        );
        assert_eq!(
            resend_after(Duration::from_secs(20), second, patience),
            None
        );
        assert_eq!(
            resend_after(Duration::ZERO, Duration::from_secs(21), patience),
            None
        );
    }

    #[test]
    fn the_factor_halves_at_a_429_never_below_its_floor_and_grows_back_to_one() {
        assert_eq!(BACKOFF.lowered(1.0), 0.5);
        assert_eq!(BACKOFF.lowered(0.15), BACKOFF.floor);
        assert!((BACKOFF.recovered(0.5, Duration::from_secs(4)) - 0.7).abs() < 1e-9);
        assert_eq!(BACKOFF.recovered(0.5, Duration::from_secs(10)), 1.0);
        assert_eq!(BACKOFF.recovered(0.9, Duration::from_secs(3600)), 1.0);
    }
}
