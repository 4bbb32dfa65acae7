//! What Stripe's answers and objects prove, for the payments provider spoken as Stripe
//! (`PAYMENTS_PROVIDER=stripe`): pure rules, no HTTP. The adapter
//! (`fleet_providers::stripe`) builds the requests and pages the lists; here is how a
//! refund object, an error answer and a list of refunds read, and how an object names the
//! operation that made it (its `metadata[fleet_operation]`, [`operation_of`], which every
//! reader of Stripe objects shares: reconcile's lookup and event intake alike).
//!
//! Stripe's reference: refunds <https://docs.stripe.com/api/refunds/object>, errors
//! <https://docs.stripe.com/api/errors>, idempotent requests
//! <https://docs.stripe.com/api/idempotent_requests>.

pub mod accounts;
pub mod charge;
pub mod refundable;
pub mod search;
pub mod transfer;

use serde_json::Value;

use crate::lookup::{Found, Reading};
use crate::outcome::{transport, unknown, CallResult, Outcome, ProviderAnswer};
use crate::reason::Reason;

/// The metadata key every object the fleet creates at Stripe carries: the operation's
/// idempotency key (the reference reconcile searches by).
pub const OPERATION_METADATA: &str = "fleet_operation";

/// The metadata key naming the operation's tenant.
pub const TENANT_METADATA: &str = "fleet_tenant";

/// The operation a Stripe object was created for: its `metadata[fleet_operation]`.
/// `None` for an object the fleet did not create (or whose metadata someone removed).
pub fn operation_of(object: &Value) -> Option<&str> {
    object
        .get("metadata")?
        .get(OPERATION_METADATA)?
        .as_str()
        .filter(|key| !key.is_empty())
}

/// What a payment to refund is, at Stripe, by the prefix of its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refunded<'a> {
    /// `pi_…`: a PaymentIntent (the refund's `payment_intent`).
    PaymentIntent(&'a str),
    /// `ch_…`: a Charge (the refund's `charge`).
    Charge(&'a str),
}

impl<'a> Refunded<'a> {
    /// `None` for an id that names neither: no refund request is made of it.
    pub fn parse(payment_id: &'a str) -> Option<Refunded<'a>> {
        if payment_id.len() > 3 && payment_id.starts_with("pi_") {
            Some(Refunded::PaymentIntent(payment_id))
        } else if payment_id.len() > 3 && payment_id.starts_with("ch_") {
            Some(Refunded::Charge(payment_id))
        } else {
            None
        }
    }

    /// The form field (and list filter) that names it.
    pub fn field(self) -> &'static str {
        match self {
            Refunded::PaymentIntent(_) => "payment_intent",
            Refunded::Charge(_) => "charge",
        }
    }

    pub fn id(self) -> &'a str {
        match self {
            Refunded::PaymentIntent(id) | Refunded::Charge(id) => id,
        }
    }
}

/// Reads a Stripe Refund object: `succeeded` is final, `pending` and `requires_action`
/// are still in Stripe's hands (settled later), `failed` and `canceled` are final
/// failures with Stripe's `failure_reason` when it gives one. `None` for anything else
/// (another object, a status this version does not know): never guessed.
pub fn read_refund(object: &Value) -> Option<Found> {
    if object.get("object").and_then(Value::as_str) != Some("refund") {
        return None;
    }
    let external_id = object.get("id")?.as_str()?.to_owned();
    let reason = || {
        object
            .get("failure_reason")
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
    };
    match object.get("status")?.as_str()? {
        "succeeded" => Some(Found::Succeeded { external_id }),
        "pending" | "requires_action" => Some(Found::Pending { external_id }),
        "failed" => Some(Found::Failed {
            external_id,
            code: reason().unwrap_or("refund_failed").to_owned(),
        }),
        "canceled" => Some(Found::Failed {
            external_id,
            code: reason().unwrap_or("refund_canceled").to_owned(),
        }),
        _ => None,
    }
}

/// What the answer to `POST /v1/refunds` proves.
///
/// - 200 with a refund: its status ([`read_refund`]); an unreadable 200 is unknown.
/// - `idempotency_error` (any status): Stripe holds other parameters under the key, or
///   another request with it is in flight: escalated, never sent again.
/// - 401/403: our key is wrong or lacks the permission: a configuration error for an
///   operator, escalated (nothing is sent again until a person looks).
/// - 429: refused in front of Stripe, nothing saved: not executed (execute waits for the
///   pacer and sends the same request again); with `Stripe-Should-Retry: false`, never
///   sent again: escalated.
/// - any other 4xx with `Stripe-Should-Retry: true` (a `lock_timeout` 409): refused
///   before executing, nothing saved under the key: not executed, sent again.
/// - any other 4xx: Stripe refused it; its error `code` (`charge_already_refunded`,
///   `amount_too_large`, …) is the failure.
/// - 5xx and everything the transport lost: unknown, for reconcile to look up, whatever
///   `Stripe-Should-Retry` says (the request may have executed); with `false`, escalated.
pub fn classify_refund(call: &CallResult) -> Outcome {
    classify_answer(call, read_refund)
}

/// What the answer to a create at Stripe proves, its object read by `read` (a refund, a
/// transfer, …): Stripe's answers read alike whatever the object, as [`classify_refund`]
/// documents.
pub fn classify_answer(call: &CallResult, read: impl Fn(&Value) -> Option<Found>) -> Outcome {
    let answer = match refused_or_answered(call, read) {
        Ok(answer) => answer,
        Err(outcome) => return outcome,
    };
    let body = &answer.body;
    let error_type = body.pointer("/error/type").and_then(Value::as_str);
    let error_code = body.pointer("/error/code").and_then(Value::as_str);
    match answer.status {
        // Stripe's rate refused it before anything executed; only Stripe saying a retry
        // would not help keeps it from the pacer, and then a person decides.
        429 if answer.should_retry == Some(false) => Outcome::Unknown {
            reason: Reason::Http(429),
            escalate: true,
        },
        429 => Outcome::NotExecuted {
            reason: Reason::Http(429),
        },
        // Refused before it executed (a lock held by another request, say): no result was
        // saved under the key, and Stripe says the same request may succeed.
        s @ 400..=499 if answer.should_retry == Some(true) => Outcome::NotExecuted {
            reason: Reason::Http(s),
        },
        400..=499 => Outcome::Failed {
            code: error_code
                .or(error_type)
                .unwrap_or("invalid_request")
                .to_owned(),
        },
        // Sent, and perhaps executed, whatever the header says: a lookup settles it, and a
        // same-key retry comes only from reconcile while Stripe keeps the key. Stripe
        // saying a retry would not help makes it a person's at once.
        s => Outcome::Unknown {
            reason: Reason::Http(s),
            escalate: answer.should_retry == Some(false),
        },
    }
}

/// What every create's answer at Stripe proves alike (`Err`): nothing sent, or no answer;
/// a success, its object read by `read` (unreadable: unknown); the key reused for another
/// request (`idempotency_error`, any status) or the credentials refused (401, 403), both
/// escalated. `Ok`: an answer its object's own rules read.
pub(crate) fn refused_or_answered(
    call: &CallResult,
    read: impl Fn(&Value) -> Option<Found>,
) -> Result<&ProviderAnswer, Outcome> {
    let answer = transport(call)?;
    let error_type = answer.body.pointer("/error/type").and_then(Value::as_str);
    Err(match answer.status {
        200 | 201 => {
            read(&answer.body).map_or_else(|| unknown(Reason::UnreadableSuccessBody), Outcome::from)
        }
        _ if error_type == Some("idempotency_error") => Outcome::Unknown {
            reason: Reason::IdempotencyKeyReused,
            escalate: true,
        },
        s @ (401 | 403) => Outcome::Unknown {
            reason: Reason::Http(s),
            escalate: true,
        },
        _ => return Ok(answer),
    })
}

/// Reads what a lookup of refunds returned (a read by id, or the pages of a list): only
/// refunds whose `metadata[fleet_operation]` is `key` count, each read by
/// [`read_refund`]; one that cannot be read makes the lookup inconclusive.
pub fn read_refunds(key: &str, via: &str, objects: &[Value]) -> Reading {
    let ours = objects.iter().filter(|o| operation_of(o) == Some(key));
    crate::actions::search::read_ours(via, ours, read_refund)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lookup::Lookup;
    use crate::outcome::{NoAnswerKind, ProviderAnswer};
    use serde_json::json;

    fn answer(status: u16, body: Value) -> CallResult {
        crate::outcome::answer(status, false, body)
    }

    fn refund(status: &str) -> Value {
        json!({"id": "re_1", "object": "refund", "status": status,
               "metadata": {"fleet_operation": "op_A"}})
    }

    fn saying(status: u16, should_retry: bool, body: Value) -> CallResult {
        match answer(status, body) {
            CallResult::Answer(a) => CallResult::Answer(ProviderAnswer {
                should_retry: Some(should_retry),
                ..a
            }),
            other => other,
        }
    }

    /// `Stripe-Should-Retry` never turns a request that may have executed into a retry,
    /// and its `false` never lets the fleet send a request again.
    #[test]
    fn stripe_should_retry_reads_with_the_status() {
        let limited = json!({"error": {"type": "invalid_request_error", "code": "rate_limit"}});
        let not_executed = |s| Outcome::NotExecuted {
            reason: Reason::Http(s),
        };
        let unknown = |s, escalate| Outcome::Unknown {
            reason: Reason::Http(s),
            escalate,
        };
        // 429: the pacer, with or without the header; `false`: a person.
        assert_eq!(
            classify_refund(&answer(429, limited.clone())),
            not_executed(429)
        );
        assert_eq!(
            classify_refund(&saying(429, true, limited.clone())),
            not_executed(429)
        );
        assert_eq!(
            classify_refund(&saying(429, false, limited)),
            unknown(429, true)
        );
        // A lock held by another request: refused before executing, may go again.
        let locked = json!({"error": {"type": "invalid_request_error", "code": "lock_timeout"}});
        assert_eq!(
            classify_refund(&saying(409, true, locked.clone())),
            not_executed(409)
        );
        assert_eq!(
            classify_refund(&saying(409, false, locked)),
            Outcome::Failed {
                code: "lock_timeout".into()
            }
        );
        // A 5xx may have executed: unknown either way, a person's at once on `false`.
        let api_error = json!({"error": {"type": "api_error"}});
        assert_eq!(
            classify_refund(&saying(500, true, api_error.clone())),
            unknown(500, false)
        );
        assert_eq!(
            classify_refund(&saying(503, false, api_error.clone())),
            unknown(503, true)
        );
        assert_eq!(
            classify_refund(&answer(502, api_error)),
            unknown(502, false)
        );
        // An idempotency error is never sent again, whatever Stripe adds.
        let reused = json!({"error": {"type": "idempotency_error"}});
        assert_eq!(
            classify_refund(&saying(409, true, reused)),
            Outcome::Unknown {
                reason: Reason::IdempotencyKeyReused,
                escalate: true
            }
        );
    }

    #[test]
    fn a_refund_reads_by_its_status() {
        assert_eq!(
            classify_refund(&answer(200, refund("succeeded"))),
            Outcome::Succeeded {
                external_id: "re_1".into()
            }
        );
        for pending in ["pending", "requires_action"] {
            assert_eq!(
                classify_refund(&answer(200, refund(pending))),
                Outcome::Accepted {
                    external_id: Some("re_1".into())
                }
            );
        }
        let mut failed = refund("failed");
        failed["failure_reason"] = json!("expired_or_canceled_card");
        assert_eq!(
            classify_refund(&answer(200, failed)),
            Outcome::Failed {
                code: "expired_or_canceled_card".into()
            }
        );
        assert_eq!(
            classify_refund(&answer(200, refund("canceled"))),
            Outcome::Failed {
                code: "refund_canceled".into()
            }
        );
        assert_eq!(
            classify_refund(&answer(200, refund("weird"))),
            Outcome::Unknown {
                reason: Reason::UnreadableSuccessBody,
                escalate: false
            }
        );
        let charge = json!({"id": "ch_1", "object": "charge", "status": "succeeded"});
        assert!(matches!(
            classify_refund(&answer(200, charge)),
            Outcome::Unknown { .. }
        ));
    }

    #[test]
    fn stripe_errors_read_by_type_and_code() {
        let error = |t: &str, c: Option<&str>| json!({"error": {"type": t, "code": c}});
        assert_eq!(
            classify_refund(&answer(
                400,
                error("invalid_request_error", Some("charge_already_refunded"))
            )),
            Outcome::Failed {
                code: "charge_already_refunded".into()
            }
        );
        assert_eq!(
            classify_refund(&answer(
                400,
                error("invalid_request_error", Some("amount_too_large"))
            )),
            Outcome::Failed {
                code: "amount_too_large".into()
            }
        );
        assert_eq!(
            classify_refund(&answer(404, error("invalid_request_error", None))),
            Outcome::Failed {
                code: "invalid_request_error".into()
            }
        );
        for status in [400, 409] {
            assert_eq!(
                classify_refund(&answer(status, error("idempotency_error", None))),
                Outcome::Unknown {
                    reason: Reason::IdempotencyKeyReused,
                    escalate: true
                }
            );
        }
        for status in [401, 403] {
            assert_eq!(
                classify_refund(&answer(status, error("invalid_request_error", None))),
                Outcome::Unknown {
                    reason: Reason::Http(status),
                    escalate: true
                }
            );
        }
        assert_eq!(
            classify_refund(&answer(
                429,
                error("invalid_request_error", Some("rate_limit"))
            )),
            Outcome::NotExecuted {
                reason: Reason::Http(429)
            }
        );
        assert_eq!(
            classify_refund(&answer(502, Value::Null)),
            Outcome::Unknown {
                reason: Reason::Http(502),
                escalate: false
            }
        );
        assert_eq!(
            classify_refund(&CallResult::NoAnswer {
                kind: NoAnswerKind::Timeout
            }),
            Outcome::Unknown {
                reason: Reason::Timeout,
                escalate: false
            }
        );
    }

    #[test]
    fn only_refunds_carrying_the_operation_count() {
        let other = json!({"id": "re_2", "object": "refund", "status": "succeeded",
                           "metadata": {"fleet_operation": "op_B"}});
        let none = json!({"id": "re_3", "object": "refund", "status": "succeeded", "metadata": {}});
        let read = read_refunds("op_A", "list", &[refund("pending"), other, none]);
        assert_eq!(
            read.lookup,
            Lookup::Matches(vec![Found::Pending {
                external_id: "re_1".into()
            }])
        );
        assert_eq!(read.evidence, json!({"via": "list", "found": ["re_1"]}));
        assert_eq!(
            read_refunds("op_C", "list", &[refund("pending")]).lookup,
            Lookup::Matches(vec![])
        );
        assert_eq!(
            read_refunds("op_A", "list", &[refund("weird")]).lookup,
            Lookup::Failed
        );
    }

    #[test]
    fn the_payment_refunded_is_named_by_its_prefix() {
        assert_eq!(
            Refunded::parse("pi_123").map(Refunded::field),
            Some("payment_intent")
        );
        assert_eq!(
            Refunded::parse("ch_123").map(Refunded::field),
            Some("charge")
        );
        assert_eq!(Refunded::parse("pay_123"), None);
        assert_eq!(Refunded::parse("pi_"), None);
        assert_eq!(
            operation_of(&json!({"metadata": {"fleet_operation": ""}})),
            None
        );
    }
}
