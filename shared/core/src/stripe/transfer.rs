//! `payment.create` spoken as Stripe: a Connect transfer to the beneficiary's connected
//! account. What the answer to `POST /v1/transfers` and a Transfer object prove (pure
//! rules, no HTTP); the adapter (`fleet_providers::stripe::transfer`) builds the request
//! and pages the list.
//!
//! A transfer has no status: Stripe answers with the Transfer once it has moved the
//! money from the platform's balance to the connected account, so a Transfer object is a
//! payment made. A later reversal (`amount_reversed`, `reversed`) is another movement of
//! money, a person's business; it does not undo the fact that the payment was made.
//!
//! Who is paid: with Stripe the payee's id (`beneficiary_id`) is its connected account
//! (`acct_…`). The id is part of the approved, hashed snapshot, so the destination the
//! approver saw is the one the transfer goes to, and nothing after the approval can
//! change it.
//!
//! Stripe's reference: transfers <https://docs.stripe.com/api/transfers/object>, Connect
//! transfers <https://docs.stripe.com/connect/separate-charges-and-transfers>.

use serde_json::Value;

use super::{classify_answer, operation_of};
use crate::lookup::{Found, Reading};
use crate::outcome::{CallResult, Outcome};

/// The metadata key naming the invoice a transfer pays (also its `transfer_group`).
pub const INVOICE_METADATA: &str = "fleet_invoice";

/// The connected account a payee id names: `acct_` followed by letters and digits.
/// `None` for any other id: no transfer request is made of it.
pub fn destination(beneficiary_id: &str) -> Option<&str> {
    let rest = beneficiary_id.strip_prefix("acct_")?;
    (!rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric())).then_some(beneficiary_id)
}

/// Reads a Stripe Transfer object: a transfer (`tr_…`) is a payment made. `None` for
/// anything else (another object, an id that is not a transfer's): never guessed.
pub fn read_transfer(object: &Value) -> Option<Found> {
    if object.get("object").and_then(Value::as_str) != Some("transfer") {
        return None;
    }
    let id = object.get("id")?.as_str()?;
    if !id.starts_with("tr_") || id.len() <= 3 {
        return None;
    }
    Some(Found::Succeeded {
        external_id: id.to_owned(),
    })
}

/// What the answer to `POST /v1/transfers` proves: as every create's answer at Stripe
/// ([`super::classify_refund`]): a Transfer is succeeded, a 4xx with a `code`
/// (`balance_insufficient`, …) failed with that code, an `idempotency_error` and a 401/403
/// escalated, a 429 not executed (paced and sent again), a 5xx or no answer unknown.
pub fn classify_transfer(call: &CallResult) -> Outcome {
    classify_answer(call, read_transfer)
}

/// Reads what a lookup of transfers returned (a read by id, or the pages of the invoice's
/// transfer group): only transfers whose `metadata[fleet_operation]` is `key` count.
pub fn read_transfers(key: &str, via: &str, objects: &[Value]) -> Reading {
    let ours = objects.iter().filter(|o| operation_of(o) == Some(key));
    crate::actions::search::read_ours(via, ours, read_transfer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lookup::Lookup;
    use crate::outcome::{NoAnswerKind, ProviderAnswer};
    use crate::reason::Reason;
    use serde_json::json;

    fn answer(status: u16, body: Value) -> CallResult {
        CallResult::Answer(ProviderAnswer {
            status,
            replayed: false,
            request_id: None,
            retry_after: None,
            body,
        })
    }

    fn transfer(id: &str, key: &str) -> Value {
        json!({"id": id, "object": "transfer", "amount": 1000, "currency": "kzt",
               "destination": "acct_1Vendor77", "transfer_group": "inv_1",
               "metadata": {"fleet_operation": key}})
    }

    #[test]
    fn the_destination_is_a_connected_account() {
        assert_eq!(destination("acct_1Vendor77"), Some("acct_1Vendor77"));
        for not in ["vendor_77", "acct_", "acct_a-b", "ACCT_1", "acct_1 "] {
            assert_eq!(destination(not), None, "{not}");
        }
    }

    #[test]
    fn a_transfer_is_a_payment_made_and_errors_read_as_stripes() {
        assert_eq!(
            classify_transfer(&answer(200, transfer("tr_1", "op_A"))),
            Outcome::Succeeded {
                external_id: "tr_1".into()
            }
        );
        let mut reversed = transfer("tr_2", "op_A");
        reversed["reversed"] = json!(true);
        assert_eq!(
            classify_transfer(&answer(200, reversed)),
            Outcome::Succeeded {
                external_id: "tr_2".into()
            }
        );
        let refund = json!({"id": "re_1", "object": "refund", "status": "succeeded"});
        assert_eq!(
            classify_transfer(&answer(200, refund)),
            Outcome::Unknown {
                reason: Reason::UnreadableSuccessBody,
                escalate: false
            }
        );
        let error = |t: &str, c: Option<&str>| json!({"error": {"type": t, "code": c}});
        assert_eq!(
            classify_transfer(&answer(
                400,
                error("invalid_request_error", Some("balance_insufficient"))
            )),
            Outcome::Failed {
                code: "balance_insufficient".into()
            }
        );
        assert_eq!(
            classify_transfer(&answer(400, error("idempotency_error", None))),
            Outcome::Unknown {
                reason: Reason::IdempotencyKeyReused,
                escalate: true
            }
        );
        assert_eq!(
            classify_transfer(&answer(401, error("invalid_request_error", None))),
            Outcome::Unknown {
                reason: Reason::Http(401),
                escalate: true
            }
        );
        assert_eq!(
            classify_transfer(&answer(
                429,
                error("invalid_request_error", Some("rate_limit"))
            )),
            Outcome::NotExecuted {
                reason: Reason::Http(429)
            }
        );
        assert_eq!(
            classify_transfer(&answer(500, error("api_error", None))),
            Outcome::Unknown {
                reason: Reason::Http(500),
                escalate: false
            }
        );
        assert_eq!(
            classify_transfer(&CallResult::NoAnswer {
                kind: NoAnswerKind::Reset
            }),
            Outcome::Unknown {
                reason: Reason::ConnectionReset,
                escalate: false
            }
        );
    }

    #[test]
    fn only_transfers_carrying_the_operation_count() {
        let objects = [
            transfer("tr_1", "op_A"),
            transfer("tr_2", "op_B"),
            json!({"id": "tr_3", "object": "transfer", "metadata": {}}),
        ];
        let read = read_transfers("op_A", "transfer_group", &objects);
        assert_eq!(
            read.lookup,
            Lookup::Matches(vec![Found::Succeeded {
                external_id: "tr_1".into()
            }])
        );
        assert_eq!(
            read_transfers("op_C", "transfer_group", &objects).lookup,
            Lookup::Matches(vec![])
        );
        let broken = json!({"id": "x_1", "object": "transfer",
                            "metadata": {"fleet_operation": "op_A"}});
        assert_eq!(
            read_transfers("op_A", "transfer_group", &[broken]).lookup,
            Lookup::Failed
        );
    }
}
