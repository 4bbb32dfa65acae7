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
//! change it. Where the money then goes is the account's payout (external) account: it is
//! read at intake into the payee evidence the approver is shown ([`account_evidence`]),
//! and read again before the transfer; another payout account since is not what was
//! approved.
//!
//! Stripe's reference: transfers <https://docs.stripe.com/api/transfers/object>, Connect
//! transfers <https://docs.stripe.com/connect/separate-charges-and-transfers>.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{classify_answer, operation_of};
use crate::lookup::{Found, Reading};
use crate::outcome::{CallResult, Outcome};
use crate::payee::{Payee, PayeeAccount, PayeeEvidence, UnknownPayee};

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

/// The longest business name kept: Stripe is not trusted to bound it.
const MAX_NAME_CHARS: usize = 200;

/// Who a transfer to `account_id` pays, as Stripe's Account object `answer` describes it
/// (`None`: 404, no such account): kept as the operation's payee evidence. Its `id` is the
/// account, its name the account's business name, its country the account's, `verified`
/// whether Stripe lets the account be paid out, and its account the payout (external)
/// account money transferred to it is paid out to: the bank (or debit card) and last four,
/// with a hash of Stripe's fingerprint (equal for the same bank account). An account whose
/// payout accounts the platform cannot see (a Standard account) is described by its id.
/// Anything that is not Stripe's documented shape is an unknown payee (`lookup_failed`).
pub fn account_evidence(
    account_id: &str,
    answer: Option<&Value>,
    at: DateTime<Utc>,
) -> PayeeEvidence {
    let unknown = |reason| PayeeEvidence::Unknown {
        id: account_id.to_owned(),
        reason,
        looked_up_at: at,
    };
    let Some(account) = answer else {
        return unknown(UnknownPayee::NotFound);
    };
    if account.get("object").and_then(Value::as_str) != Some("account")
        || account.get("id").and_then(Value::as_str) != Some(account_id)
    {
        return unknown(UnknownPayee::LookupFailed);
    }
    let name = short(account.pointer("/business_profile/name"))
        .or_else(|| short(account.pointer("/settings/dashboard/display_name")))
        .unwrap_or(account_id)
        .to_owned();
    let country = |v: Option<&Value>| {
        short(v)
            .map(str::to_ascii_uppercase)
            .filter(|c| c.len() == 2 && c.bytes().all(|b| b.is_ascii_uppercase()))
    };
    let payout = match payout_account(account) {
        Ok(payout) => payout,
        Err(()) => return unknown(UnknownPayee::LookupFailed),
    };
    let (scheme, masked, fingerprint) = match payout {
        Some(payout) => {
            let last4 = short(payout.get("last4"))
                .filter(|l| l.len() == 4 && l.bytes().all(|b| b.is_ascii_digit()));
            let (Some(last4), Some(fingerprint)) = (last4, short(payout.get("fingerprint"))) else {
                return unknown(UnknownPayee::LookupFailed);
            };
            let (scheme, label) = match payout.get("object").and_then(Value::as_str) {
                Some("card") => ("card", short(payout.get("brand")).unwrap_or("card")),
                _ => (
                    "bank",
                    short(payout.get("bank_name")).unwrap_or("bank account"),
                ),
            };
            (
                scheme,
                format!("{label} •••• {last4}"),
                fingerprint.to_owned(),
            )
        }
        // No payout account the platform can see: the connected account itself.
        None => (
            "stripe_account",
            account_id.to_owned(),
            account_id.to_owned(),
        ),
    };
    let digest = Sha256::digest(format!("stripe:{fingerprint}").as_bytes());
    PayeeEvidence::Found {
        payee: Payee {
            id: account_id.to_owned(),
            name,
            country: country(account.get("country")).unwrap_or_else(|| "ZZ".to_owned()),
            account: PayeeAccount {
                scheme: scheme.to_owned(),
                masked,
                fingerprint: format!("sha256:{}", hex::encode(digest)),
            },
            verified: account.get("payouts_enabled").and_then(Value::as_bool) == Some(true),
            version: 1,
        },
        looked_up_at: at,
        name_check: None,
    }
}

/// A short text member: trimmed, not empty, bounded.
fn short(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty() && s.chars().count() <= MAX_NAME_CHARS)
}

/// The account's payout account: the default one for its currency, else the first;
/// `None` when the platform sees none; `Err` for a list that is not Stripe's shape.
fn payout_account(account: &Value) -> Result<Option<&Value>, ()> {
    let Some(list) = account.get("external_accounts").filter(|l| !l.is_null()) else {
        return Ok(None);
    };
    let data = list.get("data").and_then(Value::as_array).ok_or(())?;
    Ok(data
        .iter()
        .find(|a| a.get("default_for_currency").and_then(Value::as_bool) == Some(true))
        .or_else(|| data.first()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lookup::Lookup;
    use crate::outcome::NoAnswerKind;
    use crate::reason::Reason;
    use serde_json::json;

    fn answer(status: u16, body: Value) -> CallResult {
        crate::outcome::answer(status, false, body)
    }

    fn transfer(id: &str, key: &str) -> Value {
        json!({"id": id, "object": "transfer", "amount": 1000, "currency": "kzt",
               "destination": "acct_1Vendor77", "transfer_group": "inv_1",
               "metadata": {"fleet_operation": key}})
    }

    fn account(last4: &str, fingerprint: &str) -> Value {
        json!({"id": "acct_1Vendor77", "object": "account", "country": "kz",
               "business_profile": {"name": "Vendor 77 LLP"}, "payouts_enabled": true,
               "external_accounts": {"object": "list", "data": [
                   {"object": "bank_account", "bank_name": "Other Bank", "last4": "0000",
                    "fingerprint": "fpOther", "default_for_currency": false},
                   {"object": "bank_account", "bank_name": "Halyk Bank", "last4": last4,
                    "fingerprint": fingerprint, "default_for_currency": true}]}})
    }

    #[test]
    fn the_payee_is_the_accounts_business_and_its_payout_account() {
        let at = Utc::now();
        let found = account_evidence("acct_1Vendor77", Some(&account("4321", "fpA")), at);
        let payee = found.found().expect("found").clone();
        assert_eq!(payee.id, "acct_1Vendor77");
        assert_eq!(payee.name, "Vendor 77 LLP");
        assert_eq!(payee.country, "KZ");
        assert_eq!(payee.account.scheme, "bank");
        assert_eq!(payee.account.masked, "Halyk Bank •••• 4321");
        assert!(payee.account.fingerprint.starts_with("sha256:"));
        assert!(!payee.account.fingerprint.contains("fpA"));
        assert!(payee.verified);
        // Another payout account is another payee account, as the charge's rule compares.
        let moved = account_evidence("acct_1Vendor77", Some(&account("9999", "fpB")), at);
        assert_ne!(moved.found().unwrap().account, payee.account);
        assert!(!super::super::charge::same_payer(&found, &Ok(moved)));
        let again = account_evidence("acct_1Vendor77", Some(&account("4321", "fpA")), at);
        assert!(super::super::charge::same_payer(&found, &Ok(again)));
        // A Standard account shows no payout account: described by itself.
        let standard = json!({"id": "acct_1Vendor77", "object": "account",
                              "settings": {"dashboard": {"display_name": "V77"}}});
        let standard = account_evidence("acct_1Vendor77", Some(&standard), at);
        let standard = standard.found().unwrap();
        assert_eq!(
            (
                standard.name.as_str(),
                standard.account.scheme.as_str(),
                standard.country.as_str()
            ),
            ("V77", "stripe_account", "ZZ")
        );
        assert!(!standard.verified);
    }

    #[test]
    fn no_account_or_another_shape_is_an_unknown_payee() {
        let at = Utc::now();
        let reason = |e: PayeeEvidence| match e {
            PayeeEvidence::Unknown { reason, .. } => Some(reason),
            PayeeEvidence::Found { .. } => None,
        };
        assert_eq!(
            reason(account_evidence("acct_1", None, at)),
            Some(UnknownPayee::NotFound)
        );
        let other = json!({"id": "acct_2", "object": "account"});
        assert_eq!(
            reason(account_evidence("acct_1", Some(&other), at)),
            Some(UnknownPayee::LookupFailed)
        );
        let mut broken = account("12", "fpA");
        broken["id"] = json!("acct_1Vendor77");
        assert_eq!(
            reason(account_evidence("acct_1Vendor77", Some(&broken), at)),
            Some(UnknownPayee::LookupFailed)
        );
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
