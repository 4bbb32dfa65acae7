//! The provider APIs' rate limit, when `SimConfig::rate_limit_per_s` (or, at run time,
//! `POST /_sim/rate_limit {"per_second": n | null}`) sets one: each
//! provider API (the payments API with its refunds and payees, the CRM, orders,
//! e-signatures) has a token bucket of its own holding one second of requests and refilled
//! at the rate, over all of its routes, reads and writes alike. A request that finds it
//! empty is answered `429` with `Retry-After: 1` and the usual error body, before anything
//! else happens (no fault, no effect, nothing saved under its key), and is logged with
//! status 429 so that a test can count the refusals.

use std::collections::HashMap;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::header::RETRY_AFTER;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::api_error::ApiError;
use crate::request_log::LoggedRequest;
use crate::route::Route;
use crate::state::App;

/// The wait every refusal asks for.
pub const RETRY_AFTER_S: u64 = 1;

/// The limit in force, and one bucket per provider API.
#[derive(Debug, Default)]
pub struct RateLimits {
    /// Requests per second each provider API admits; `None`: no limit.
    pub per_second: Option<u32>,
    buckets: HashMap<&'static str, Bucket>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl RateLimits {
    pub fn new(per_second: Option<u32>) -> RateLimits {
        RateLimits {
            per_second: per_second.filter(|r| *r > 0),
            buckets: HashMap::new(),
        }
    }

    /// Sets the limit (`None`: none); every bucket starts full again.
    pub fn set(&mut self, per_second: Option<u32>) {
        *self = RateLimits::new(per_second);
    }

    /// Takes a request's token from `provider`'s bucket, if one is there (always, with no
    /// limit in force).
    pub fn admit(&mut self, provider: &'static str, now: Instant) -> bool {
        let Some(per_second) = self.per_second else {
            return true;
        };
        let capacity = f64::from(per_second);
        let bucket = self.buckets.entry(provider).or_insert(Bucket {
            tokens: capacity,
            at: now,
        });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * capacity).min(capacity);
        bucket.at = bucket.at.max(now);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

pub async fn limit(State(app): State<App>, request: Request, next: Next) -> Response {
    // Inside the `/v1` nest the path comes without its prefix.
    let path = format!("/v1{}", request.uri().path());
    let Some(route) = Route::matching(request.method().as_str(), &path) else {
        return next.run(request).await;
    };
    let admitted = {
        let mut state = app.lock();
        let admitted = state.rate_limits.admit(route.provider(), Instant::now());
        if !admitted {
            let key = request
                .headers()
                .get("idempotency-key")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            state.requests.record(LoggedRequest {
                method: route.method(),
                path: route.path(),
                idempotency_key: key.clone(),
                // A keyed create's key is its reference; other refusals name none.
                reference: key,
                status: Some(429),
                replayed: false,
                arrived_at: String::new(),
            });
        }
        admitted
    };
    if admitted {
        return next.run(request).await;
    }
    let mut response = ApiError::rate_limited().into_response();
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(RETRY_AFTER_S));
    response
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_bucket_holds_one_second_and_refills_at_the_rate_per_provider() {
        let mut limits = RateLimits::new(Some(10));
        let t0 = Instant::now();
        for _ in 0..10 {
            assert!(limits.admit("payments", t0));
        }
        assert!(!limits.admit("payments", t0));
        // Another provider's bucket is its own.
        assert!(limits.admit("crm", t0));
        // A tenth of a second brings one token back, no more.
        let later = t0 + Duration::from_millis(100);
        assert!(limits.admit("payments", later));
        assert!(!limits.admit("payments", later));
        // Idle for long, the bucket is full again, and never fuller.
        let idle = t0 + Duration::from_secs(60);
        assert_eq!(
            (0..20).filter(|_| limits.admit("payments", idle)).count(),
            10
        );
        limits.set(None);
        assert!((0..100).all(|_| limits.admit("payments", idle)));
    }
}
