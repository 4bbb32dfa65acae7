//! Per-principal request rate limits (`API_RATE_PER_S`, `API_RATE_BURST`): a token
//! bucket ([`fleet_core::rate`]) for each authenticated principal, checked as the caller
//! is authenticated, so every door (the JSON routes and `/mcp`) counts against the same
//! bucket. One agent going too fast is refused (429 `rate_limited` with `Retry-After`);
//! everybody else's buckets are untouched. Per process: behind N replicas a principal
//! gets up to N times the rate.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fleet_core::rate::{retry_after_s, Bucket, RateRule};

use crate::error::ApiError;

/// Above this many buckets, full ones are forgotten (a full bucket is what a principal
/// not seen before gets anyway), so the map holds only principals active of late.
const PRUNE_ABOVE: usize = 1_024;

pub struct RateLimits {
    rule: RateRule,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl RateLimits {
    pub fn new(rule: RateRule) -> RateLimits {
        RateLimits {
            rule,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one request of `principal`: allowed, or `rate_limited`.
    pub fn check(&self, principal: &str) -> Result<(), ApiError> {
        self.check_at(principal, Instant::now())
            .map_err(|wait| ApiError::RateLimited {
                retry_after_s: retry_after_s(wait),
            })
    }

    fn check_at(&self, principal: &str, now: Instant) -> Result<(), Duration> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() > PRUNE_ABOVE {
            buckets.retain(|_, b| !b.is_full(self.rule, now));
        }
        let rule = self.rule;
        match buckets.get_mut(principal) {
            Some(bucket) => bucket.take(rule, now),
            None => {
                let mut bucket = Bucket::full(rule, now);
                let taken = bucket.take(rule, now);
                buckets.insert(principal.to_owned(), bucket);
                taken
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_principal_has_its_own_bucket() {
        let limits = RateLimits::new(RateRule::new(1, 2).unwrap());
        let now = Instant::now();
        assert!(limits.check_at("greedy", now).is_ok());
        assert!(limits.check_at("greedy", now).is_ok());
        assert!(limits.check_at("greedy", now).is_err());
        assert!(limits.check_at("other", now).is_ok());
        assert_eq!(
            limits.check("greedy"),
            Err(ApiError::RateLimited { retry_after_s: 1 })
        );
    }

    #[test]
    fn full_buckets_are_forgotten_when_there_are_many() {
        let limits = RateLimits::new(RateRule::new(1, 1).unwrap());
        let now = Instant::now();
        for i in 0..=PRUNE_ABOVE {
            limits.check_at(&format!("p{i}"), now).unwrap();
        }
        let later = now + Duration::from_secs(5);
        limits.check_at("late", later).unwrap();
        assert_eq!(limits.buckets.lock().unwrap().len(), 1);
    }
}
