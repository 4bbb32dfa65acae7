//! Request rate limits: a token bucket ([`fleet_core::rate`]) per key.
//!
//! - each authenticated principal (`API_RATE_PER_S`, `API_RATE_BURST`), counted as its
//!   bearer token is found valid ([`crate::auth`]), so every door (the JSON routes and
//!   `/mcp`) counts against the same bucket;
//! - each source address ([`AddressLimits`], `API_ANONYMOUS_RATE_PER_S`,
//!   `API_ANONYMOUS_RATE_BURST`): its requests that carry no credential at all, and
//!   apart from those its credentials that were refused. Both are checked before anything
//!   is looked up, so a client without a valid credential cannot make the API query the
//!   database faster than the rate; and one address sending no credentials does not
//!   stop a principal at the same address from being looked up.
//!
//! One client going too fast is refused (429 `rate_limited` with `Retry-After`);
//! everybody else's buckets are untouched. Per process: behind N replicas a client gets
//! up to N times the rate.

use std::collections::HashMap;
use std::net::IpAddr;
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

    /// Whether `key` has a request left, without counting one.
    pub fn has_room(&self, key: &str) -> Result<(), ApiError> {
        self.room_at(key, Instant::now())
            .map_err(|wait| ApiError::RateLimited {
                retry_after_s: retry_after_s(wait),
            })
    }

    fn room_at(&self, key: &str, now: Instant) -> Result<(), Duration> {
        let buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        match buckets.get(key) {
            // A copy takes the token: the bucket itself is left as it was.
            Some(bucket) => {
                let mut copy = *bucket;
                copy.take(self.rule, now)
            }
            None => Ok(()),
        }
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

/// The per-address buckets of requests without a valid credential.
pub struct AddressLimits {
    /// Requests that carry no credential at all.
    anonymous: RateLimits,
    /// Credentials that were looked up and refused (or were malformed).
    refused: RateLimits,
}

impl AddressLimits {
    pub fn new(rule: RateRule) -> AddressLimits {
        AddressLimits {
            anonymous: RateLimits::new(rule),
            refused: RateLimits::new(rule),
        }
    }

    /// Counts a request from `from` that carries no credential.
    pub fn anonymous(&self, from: IpAddr) -> Result<(), ApiError> {
        self.anonymous.check(&from.to_string())
    }

    /// Whether a credential from `from` may be looked up: not while the address's refused
    /// credentials are over the rate.
    pub fn may_look_up(&self, from: IpAddr) -> Result<(), ApiError> {
        self.refused.has_room(&from.to_string())
    }

    /// Counts a credential from `from` that was refused.
    pub fn refused(&self, from: IpAddr) {
        // Already over the rate: the next lookup is refused by `may_look_up`.
        let _ = self.refused.check(&from.to_string());
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
    fn room_is_looked_at_without_taking_it() {
        let limits = RateLimits::new(RateRule::new(1, 1).unwrap());
        let now = Instant::now();
        assert!(limits.room_at("a", now).is_ok());
        assert!(limits.room_at("a", now).is_ok());
        limits.check_at("a", now).unwrap();
        assert!(limits.room_at("a", now).is_err());
    }

    #[test]
    fn an_address_without_credentials_does_not_stop_lookups_from_it() {
        let limits = AddressLimits::new(RateRule::new(1, 2).unwrap());
        let from: IpAddr = [10, 0, 0, 1].into();
        assert!(limits.anonymous(from).is_ok());
        assert!(limits.anonymous(from).is_ok());
        assert!(limits.anonymous(from).is_err());
        assert!(limits.may_look_up(from).is_ok());
        limits.refused(from);
        limits.refused(from);
        assert!(matches!(
            limits.may_look_up(from),
            Err(ApiError::RateLimited { .. })
        ));
        assert!(limits.may_look_up([10, 0, 0, 2].into()).is_ok());
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
