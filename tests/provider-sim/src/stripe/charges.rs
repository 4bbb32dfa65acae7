//! What a confirmed PaymentIntent leaves behind and what gives its money back: its charge
//! (the `latest_charge`, carrying the card it was paid with), the refunds of it
//! (`POST /v1/refunds`, `GET /v1/refunds`), and the objects a read may ask to be expanded
//! in its answer (`expand[]=latest_charge`, `expand[]=customer`). Each in the account of
//! the request, as every object of the simulator.
//!
//! Stripe's reference: <https://docs.stripe.com/api/refunds/create>,
//! <https://docs.stripe.com/api/charges/object>, <https://docs.stripe.com/api/expanding_objects>.

use std::time::Instant;

use serde_json::{json, Value};

use super::state::{error, invalid, made, metadata, param, Answer, Create, Stored, StripeState};

impl StripeState {
    /// Makes the charge that paid the PaymentIntent `intent` in `account`: its id. The card
    /// it names is the payment method's, when the simulator holds it in that account.
    pub(super) fn charge_of(
        &mut self,
        intent: &str,
        account: Option<&str>,
        amount: i64,
        currency: &str,
        params: &[(String, String)],
        now: Instant,
    ) -> String {
        let method = param(params, "payment_method");
        let card = self
            .payment_methods
            .iter()
            .find(|m| m.in_account(account) && method.is_some_and(|id| m.object["id"] == id))
            .and_then(|m| m.object.get("card").cloned());
        let id = format!("ch_{}", ulid::Ulid::new());
        let object = json!({
            "id": id,
            "object": "charge",
            "amount": amount,
            "amount_captured": amount,
            "amount_refunded": 0,
            "created": chrono::Utc::now().timestamp(),
            "currency": currency,
            "customer": param(params, "customer"),
            "metadata": metadata(params),
            "paid": true,
            "payment_intent": intent,
            "payment_method": method,
            "payment_method_details": {"type": "card", "card": card},
            "refunded": false,
            "status": "succeeded",
        });
        self.charges.push(Stored::new(object, account, now));
        id
    }

    /// `found` with each field `expand[]` names (`latest_charge`, `customer`) replaced by
    /// the object of that id in `account`; a field it cannot expand stays the id.
    pub(super) fn expanded(
        &self,
        found: Answer,
        account: Option<&str>,
        query: &[(String, String)],
    ) -> Answer {
        let Answer::Json {
            status: 200,
            mut body,
            replayed,
        } = found
        else {
            return found;
        };
        for (name, field) in query {
            if name != "expand[]" {
                continue;
            }
            let held = match field.as_str() {
                "latest_charge" => &self.charges,
                "customer" => &self.customers,
                other => {
                    let said = format!("This property cannot be expanded ({other}).");
                    return invalid("parameter_invalid_string", "expand", &said);
                }
            };
            let Some(id) = body.get(field).and_then(Value::as_str) else {
                continue;
            };
            if let Some(object) = held
                .iter()
                .find(|o| o.in_account(account) && o.object["id"] == id)
            {
                body[field] = object.object.clone();
            }
        }
        Answer::Json {
            status: 200,
            body,
            replayed,
        }
    }

    /// `POST /v1/refunds` of a `payment_intent` or a `charge` of `account`: refunded at
    /// once (`succeeded`); `amount` defaults to what is left. A payment not found there, or
    /// one never paid, is refused before anything executed; more than what is left is
    /// refused as Stripe refuses it (`amount_too_large`, `charge_already_refunded`), after
    /// it executed: that refusal is saved under the key. `true` when it executed.
    pub(super) fn create_refund(&mut self, create: Create) -> (Answer, bool) {
        let Create {
            account, params, ..
        } = create;
        let (field, id) = match (param(params, "payment_intent"), param(params, "charge")) {
            (Some(pi), None) => ("payment_intent", pi),
            (None, Some(ch)) => ("charge", ch),
            _ => {
                let said = "Exactly one of payment_intent or charge is required.";
                return (invalid("parameter_missing", "payment_intent", said), false);
            }
        };
        let charge_id = if field == "charge" {
            Some(id.to_owned())
        } else {
            match self
                .payment_intents
                .iter()
                .find(|p| p.in_account(account) && p.object["id"] == id)
            {
                Some(intent) => intent.object["latest_charge"].as_str().map(str::to_owned),
                None => {
                    let said = format!("No such payment_intent: '{id}'");
                    return (invalid("resource_missing", field, &said), false);
                }
            }
        };
        let Some(charge) = charge_id.and_then(|c| {
            self.charges
                .iter_mut()
                .find(|o| o.in_account(account) && o.object["id"] == c.as_str())
        }) else {
            let said = format!("{id} has no successful charge to refund.");
            return (invalid("resource_missing", field, &said), false);
        };
        let captured = charge.object["amount_captured"].as_i64().unwrap_or(0);
        let refunded = charge.object["amount_refunded"].as_i64().unwrap_or(0);
        let left = captured - refunded;
        let amount = match param(params, "amount").map(str::parse::<i64>) {
            None => left,
            Some(Ok(amount)) if amount > 0 => amount,
            Some(_) => {
                let said = "Invalid positive integer";
                return (invalid("parameter_invalid_integer", "amount", said), false);
            }
        };
        // Executed from here on: a refusal is the request's result, saved under its key.
        if left <= 0 {
            let said = format!("Charge {} has already been refunded.", charge.object["id"]);
            let refused = error(
                400,
                "invalid_request_error",
                Some("charge_already_refunded"),
                &said,
            );
            return (refused, true);
        }
        if amount > left {
            let said = format!(
                "Refund amount ({amount}) is greater than unrefunded amount on charge ({left})"
            );
            return (invalid("amount_too_large", "amount", &said), true);
        }
        charge.object["amount_refunded"] = json!(refunded + amount);
        charge.object["refunded"] = json!(refunded + amount == captured);
        let object = json!({
            "id": format!("re_{}", ulid::Ulid::new()),
            "object": "refund",
            "amount": amount,
            "charge": charge.object["id"],
            "created": chrono::Utc::now().timestamp(),
            "currency": charge.object["currency"],
            "metadata": metadata(params),
            "payment_intent": charge.object["payment_intent"],
            "reason": param(params, "reason"),
            "status": "succeeded",
        });
        made(&mut self.refunds, object, create)
    }
}
