//! Request rate limits: a token bucket per caller. A bucket holds at most `burst`
//! tokens and gains `per_second` of them each second; a request takes one, and a
//! request that finds none is refused, told how long until one is there. The clock is
//! an input, so the rule is tested without waiting.

use std::time::{Duration, Instant};

/// How fast, and how far ahead, a caller may go.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateRule {
    per_second: f64,
    burst: f64,
}

impl RateRule {
    /// `per_second` and `burst` must be at least 1.
    pub fn new(per_second: u32, burst: u32) -> Option<RateRule> {
        (per_second >= 1 && burst >= 1).then_some(RateRule {
            per_second: f64::from(per_second),
            burst: f64::from(burst),
        })
    }
}

/// One caller's bucket.
#[derive(Debug, Clone, Copy)]
pub struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// A bucket as a caller not seen before gets it: full.
    pub fn full(rule: RateRule, now: Instant) -> Bucket {
        Bucket {
            tokens: rule.burst,
            at: now,
        }
    }

    /// Takes a token, or says how long until one is there.
    pub fn take(&mut self, rule: RateRule, now: Instant) -> Result<(), Duration> {
        self.refill(rule, now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        Err(Duration::from_secs_f64(
            (1.0 - self.tokens) / rule.per_second,
        ))
    }

    /// Whether the bucket is full again at `now`: forgetting it then changes nothing.
    pub fn is_full(&self, rule: RateRule, now: Instant) -> bool {
        let mut at_now = *self;
        at_now.refill(rule, now);
        at_now.tokens >= rule.burst
    }

    fn refill(&mut self, rule: RateRule, now: Instant) {
        // A clock read out of order adds nothing rather than panicking.
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * rule.per_second).min(rule.burst);
        self.at = self.at.max(now);
    }
}

/// The `Retry-After` for a wait: whole seconds, rounded up, at least 1.
pub fn retry_after_s(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_refuse_zero() {
        assert!(RateRule::new(0, 5).is_none());
        assert!(RateRule::new(5, 0).is_none());
        assert!(RateRule::new(1, 1).is_some());
    }

    #[test]
    fn a_burst_is_allowed_then_the_rate_holds() {
        let rule = RateRule::new(2, 3).unwrap();
        let t0 = Instant::now();
        let mut bucket = Bucket::full(rule, t0);
        for _ in 0..3 {
            assert_eq!(bucket.take(rule, t0), Ok(()));
        }
        let wait = bucket.take(rule, t0).unwrap_err();
        assert_eq!(wait, Duration::from_millis(500));
        assert_eq!(retry_after_s(wait), 1);
        let later = t0 + Duration::from_millis(500);
        assert_eq!(bucket.take(rule, later), Ok(()));
        assert!(bucket.take(rule, later).is_err());
    }

    #[test]
    fn a_bucket_refills_to_its_burst_and_no_further() {
        let rule = RateRule::new(10, 2).unwrap();
        let t0 = Instant::now();
        let mut bucket = Bucket::full(rule, t0);
        bucket.take(rule, t0).unwrap();
        assert!(!bucket.is_full(rule, t0));
        let much_later = t0 + Duration::from_secs(60);
        assert!(bucket.is_full(rule, much_later));
        assert_eq!(bucket.take(rule, much_later), Ok(()));
        assert_eq!(bucket.take(rule, much_later), Ok(()));
        assert!(bucket.take(rule, much_later).is_err());
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        assert_eq!(retry_after_s(Duration::ZERO), 1);
        assert_eq!(retry_after_s(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_s(Duration::from_secs(2)), 2);
        assert_eq!(retry_after_s(Duration::from_millis(2_001)), 3);
    }
}
