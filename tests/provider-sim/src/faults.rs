//! Fault rules installed through the admin API, and the choice of the fault (if any) that
//! a request suffers.
//!
//! A rule targets one route and fires on its next `times` matching requests, or on each
//! with a `probability`. At most one fault applies to a request: the first installed rule
//! of its route that fires. A rule fires when the request arrives, before anything else is
//! looked at (key, body), like a failure in front of the provider's application would.

use std::time::Duration;

use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::api_error::ApiError;
use crate::route::Route;

/// Bounds on what a test can ask for, so that a typo cannot hang a suite or eat memory.
const MAX_RULES: usize = 1_000;
const MAX_DELAY_MS: u64 = 600_000;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FaultKind {
    /// Close the connection unanswered; nothing executes.
    DropBeforeCommit,
    /// Execute and save under the key, then close the connection unanswered.
    DropAfterCommit,
    /// Answer this status; nothing executes, nothing is saved.
    ErrorBeforeCommit(StatusCode),
    /// Execute, then save and answer this status instead of the real result.
    ErrorAfterCommit(StatusCode),
    /// Sleep while holding the key in flight, then proceed normally.
    Delay(Duration),
    /// Create the object with status `pending` instead of the default.
    Pending,
    /// CRM create only: answer `202 queued` and create the deal after this delay (the
    /// simulator's `crm_async_delay_ms` when `None`).
    Queued(Option<Duration>),
}

impl FaultKind {
    /// A read has no commit point and creates nothing: only failures in front of it and
    /// delays mean anything there.
    const fn applies_to_reads(self) -> bool {
        match self {
            FaultKind::DropBeforeCommit | FaultKind::ErrorBeforeCommit(_) | FaultKind::Delay(_) => {
                true
            }
            FaultKind::DropAfterCommit
            | FaultKind::ErrorAfterCommit(_)
            | FaultKind::Pending
            | FaultKind::Queued(_) => false,
        }
    }

    /// Whether a rule of this kind may be installed on `route`.
    const fn applies_to(self, route: Route) -> bool {
        match self {
            FaultKind::Pending => matches!(route, Route::CreatePayment | Route::CreateRefund),
            FaultKind::Queued(_) => matches!(route, Route::CreateDeal),
            FaultKind::DropBeforeCommit
            | FaultKind::DropAfterCommit
            | FaultKind::ErrorBeforeCommit(_)
            | FaultKind::ErrorAfterCommit(_)
            | FaultKind::Delay(_) => route.creates() || self.applies_to_reads(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Trigger {
    Times(u32),
    Probability(f64),
}

#[derive(Clone, Debug)]
struct Rule {
    id: String,
    route: Route,
    kind: FaultKind,
    trigger: Trigger,
}

/// The body of `POST /_sim/faults`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    route: String,
    kind: String,
    times: Option<u32>,
    probability: Option<f64>,
    status: Option<u16>,
    delay_ms: Option<u64>,
}

#[derive(Debug)]
pub struct FaultSet {
    rules: Vec<Rule>,
    rng: SplitMix64,
}

impl FaultSet {
    pub fn new(seed: u64) -> Self {
        Self {
            rules: Vec::new(),
            rng: SplitMix64(seed),
        }
    }

    /// Installs a rule and answers its description (the admin wire shape).
    pub fn add(&mut self, spec: FaultSpec) -> Result<Value, ApiError> {
        if self.rules.len() >= MAX_RULES {
            return Err(ApiError::invalid("too_many_faults", "route"));
        }
        let rule = Rule::from_spec(spec)?;
        let description = rule.describe();
        self.rules.push(rule);
        Ok(description)
    }

    pub fn describe(&self) -> Vec<Value> {
        self.rules.iter().map(Rule::describe).collect()
    }

    /// Removes every rule and answers how many there were.
    pub fn clear(&mut self) -> usize {
        std::mem::take(&mut self.rules).len()
    }

    /// The fault this request on `route` suffers, consuming one firing of its rule.
    pub fn take(&mut self, route: Route) -> Option<FaultKind> {
        for index in 0..self.rules.len() {
            let rule = &mut self.rules[index];
            if rule.route != route {
                continue;
            }
            let kind = rule.kind;
            match &mut rule.trigger {
                Trigger::Times(left) if *left <= 1 => {
                    self.rules.remove(index);
                    return Some(kind);
                }
                Trigger::Times(left) => {
                    *left -= 1;
                    return Some(kind);
                }
                Trigger::Probability(p) => {
                    if self.rng.next_unit() < *p {
                        return Some(kind);
                    }
                }
            }
        }
        None
    }
}

impl Rule {
    fn from_spec(spec: FaultSpec) -> Result<Self, ApiError> {
        let route =
            Route::parse(&spec.route).ok_or_else(|| ApiError::invalid("unknown_route", "route"))?;
        let kind = parse_kind(&spec)?;
        if !kind.applies_to(route) {
            return Err(ApiError::invalid("fault_not_applicable", "kind"));
        }
        let trigger = match (spec.times, spec.probability) {
            (Some(_), Some(_)) => {
                return Err(ApiError::invalid("times_or_probability", "probability"))
            }
            (None, Some(p)) if p > 0.0 && p <= 1.0 => Trigger::Probability(p),
            (None, Some(_)) => return Err(ApiError::invalid("parameter_invalid", "probability")),
            (Some(0), None) => return Err(ApiError::invalid("parameter_invalid", "times")),
            (Some(n), None) => Trigger::Times(n),
            (None, None) => Trigger::Times(1),
        };
        Ok(Self {
            id: format!("flt_{}", ulid::Ulid::new()),
            route,
            kind,
            trigger,
        })
    }

    fn describe(&self) -> Value {
        let mut out =
            json!({"id": self.id, "route": self.route.as_str(), "kind": kind_name(self.kind)});
        match self.trigger {
            Trigger::Times(left) => out["times"] = json!(left),
            Trigger::Probability(p) => out["probability"] = json!(p),
        }
        match self.kind {
            FaultKind::ErrorBeforeCommit(status) | FaultKind::ErrorAfterCommit(status) => {
                out["status"] = json!(status.as_u16());
            }
            FaultKind::Delay(delay) | FaultKind::Queued(Some(delay)) => {
                out["delay_ms"] = json!(delay.as_millis());
            }
            FaultKind::DropBeforeCommit
            | FaultKind::DropAfterCommit
            | FaultKind::Pending
            | FaultKind::Queued(None) => {}
        }
        out
    }
}

fn parse_kind(spec: &FaultSpec) -> Result<FaultKind, ApiError> {
    let status = || -> Result<StatusCode, ApiError> {
        let code = spec
            .status
            .ok_or_else(|| ApiError::invalid("parameter_missing", "status"))?;
        match StatusCode::from_u16(code) {
            Ok(status) if status.is_client_error() || status.is_server_error() => Ok(status),
            _ => Err(ApiError::invalid("parameter_invalid", "status")),
        }
    };
    Ok(match spec.kind.as_str() {
        "drop_before_commit" => FaultKind::DropBeforeCommit,
        "drop_after_commit" => FaultKind::DropAfterCommit,
        "error_before_commit" => FaultKind::ErrorBeforeCommit(status()?),
        "error_after_commit" => FaultKind::ErrorAfterCommit(status()?),
        "delay" => match spec.delay_ms {
            Some(ms) if ms <= MAX_DELAY_MS => FaultKind::Delay(Duration::from_millis(ms)),
            Some(_) => return Err(ApiError::invalid("parameter_invalid", "delay_ms")),
            None => return Err(ApiError::invalid("parameter_missing", "delay_ms")),
        },
        "pending" => FaultKind::Pending,
        "queued" => match spec.delay_ms {
            Some(ms) if ms <= MAX_DELAY_MS => FaultKind::Queued(Some(Duration::from_millis(ms))),
            Some(_) => return Err(ApiError::invalid("parameter_invalid", "delay_ms")),
            None => FaultKind::Queued(None),
        },
        _ => return Err(ApiError::invalid("unknown_fault_kind", "kind")),
    })
}

const fn kind_name(kind: FaultKind) -> &'static str {
    match kind {
        FaultKind::DropBeforeCommit => "drop_before_commit",
        FaultKind::DropAfterCommit => "drop_after_commit",
        FaultKind::ErrorBeforeCommit(_) => "error_before_commit",
        FaultKind::ErrorAfterCommit(_) => "error_after_commit",
        FaultKind::Delay(_) => "delay",
        FaultKind::Pending => "pending",
        FaultKind::Queued(_) => "queued",
    }
}

/// A small PRNG for probabilistic rules: statistical quality is all they need, and a
/// seed keeps the choice an input of the simulator rather than ambient randomness.
#[derive(Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), from the top 53 bits (an f64 mantissa).
    fn next_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(value: Value) -> FaultSpec {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_counted_rule_fires_on_the_next_n_requests_of_its_route_only() {
        let mut faults = FaultSet::new(1);
        faults
            .add(spec(
                json!({"route": "POST /v1/payments", "kind": "drop_before_commit", "times": 2}),
            ))
            .unwrap();
        assert_eq!(faults.take(Route::CreateRefund), None);
        assert_eq!(
            faults.take(Route::CreatePayment),
            Some(FaultKind::DropBeforeCommit)
        );
        assert_eq!(
            faults.take(Route::CreatePayment),
            Some(FaultKind::DropBeforeCommit)
        );
        assert_eq!(faults.take(Route::CreatePayment), None);
        assert!(faults.describe().is_empty());
    }

    #[test]
    fn the_first_installed_rule_that_fires_wins() {
        let mut faults = FaultSet::new(1);
        faults
            .add(spec(
                json!({"route": "POST /v1/payments", "kind": "pending"}),
            ))
            .unwrap();
        faults
            .add(spec(
                json!({"route": "POST /v1/payments", "kind": "error_after_commit", "status": 503}),
            ))
            .unwrap();
        assert_eq!(faults.take(Route::CreatePayment), Some(FaultKind::Pending));
        assert_eq!(
            faults.take(Route::CreatePayment),
            Some(FaultKind::ErrorAfterCommit(StatusCode::SERVICE_UNAVAILABLE))
        );
        assert_eq!(faults.clear(), 0);
    }

    #[test]
    fn a_probabilistic_rule_fires_about_as_often_as_asked_and_stays() {
        let mut faults = FaultSet::new(42);
        faults.add(spec(json!({"route": "GET /v1/payments", "kind": "delay", "delay_ms": 5, "probability": 0.25}))).unwrap();
        let fired = (0..10_000)
            .filter(|_| faults.take(Route::SearchPayments).is_some())
            .count();
        assert!((2_000..3_000).contains(&fired), "fired {fired} times");
        assert_eq!(faults.clear(), 1);
    }

    #[test]
    fn invalid_specs_are_refused_with_the_offending_field() {
        let mut faults = FaultSet::new(1);
        let cases = [
            (
                json!({"route": "POST /v1/charges", "kind": "pending"}),
                "unknown_route",
            ),
            (
                json!({"route": "POST /v1/payments", "kind": "explode"}),
                "unknown_fault_kind",
            ),
            (
                json!({"route": "POST /v1/payments", "kind": "error_after_commit"}),
                "parameter_missing",
            ),
            (
                json!({"route": "POST /v1/payments", "kind": "error_after_commit", "status": 201}),
                "parameter_invalid",
            ),
            (
                json!({"route": "POST /v1/payments", "kind": "delay"}),
                "parameter_missing",
            ),
            (
                json!({"route": "POST /v1/payments", "kind": "pending", "times": 0}),
                "parameter_invalid",
            ),
            (
                json!({"route": "POST /v1/payments", "kind": "pending", "probability": 1.5}),
                "parameter_invalid",
            ),
            (
                json!({"route": "POST /v1/payments", "kind": "pending", "times": 1, "probability": 0.5}),
                "times_or_probability",
            ),
            (
                json!({"route": "GET /v1/payments/{id}", "kind": "drop_after_commit"}),
                "fault_not_applicable",
            ),
            (
                json!({"route": "GET /v1/deals/{id}", "kind": "error_after_commit", "status": 503}),
                "fault_not_applicable",
            ),
            (
                json!({"route": "POST /v1/deals", "kind": "pending"}),
                "fault_not_applicable",
            ),
            (
                json!({"route": "POST /v1/payments", "kind": "queued"}),
                "fault_not_applicable",
            ),
            (
                json!({"route": "PATCH /v1/deals/{id}", "kind": "queued"}),
                "fault_not_applicable",
            ),
            (
                json!({"route": "POST /v1/deals", "kind": "queued", "delay_ms": 600_001}),
                "parameter_invalid",
            ),
        ];
        for (body, code) in cases {
            assert_eq!(
                faults.add(spec(body.clone())).unwrap_err().code,
                code,
                "{body}"
            );
        }
    }

    #[test]
    fn descriptions_echo_the_rule() {
        let mut faults = FaultSet::new(1);
        let described = faults
            .add(spec(json!({"route": "POST /v1/refunds", "kind": "error_before_commit", "status": 503, "times": 3})))
            .unwrap();
        assert_eq!(described["route"], "POST /v1/refunds");
        assert_eq!(described["kind"], "error_before_commit");
        assert_eq!(described["status"], 503);
        assert_eq!(described["times"], 3);
        assert!(described["id"].as_str().unwrap().starts_with("flt_"));
    }
}
