//! Mapping for the payments provider spoken as Stripe (`PAYMENTS_PROVIDER=stripe`):
//! serves `refund.create` as `POST /v1/refunds`, form-encoded as Stripe takes it, under
//! the operation's idempotency key, with the key also in `metadata[fleet_operation]` so
//! the refund can be found again when its answer was lost. What Stripe's answers and
//! objects prove is read by `fleet_core::stripe`.
//!
//! Stripe's Search API does not cover refunds: a refund whose id we do not know is found
//! by paging `GET /v1/refunds` (filtered by the payment refunded) and matching metadata.
//! `payment.create` is a Connect transfer to the payee's connected account
//! ([`transfer`]); objects the Search API covers are found with it ([`search`]). Logs
//! carry ids and statuses only.

pub mod charge;
pub mod create;
pub mod refundable;
pub mod search;
pub mod transfer;

use fleet_core::actions::refund_create::RefundPayload;
use fleet_core::catalogue::provider_spec;
use fleet_core::catalogue::Dialect;
use fleet_core::outcome::{CallResult, Outcome};
use fleet_core::reconcile::Reading;
use fleet_core::stripe::charge::{classify_charge, read_payment_intents};
use fleet_core::stripe::transfer::{classify_transfer, read_transfers};
use fleet_core::stripe::{classify_refund, read_refunds, Refunded};
use fleet_core::{Action, ProviderName};
use serde_json::{Map, Value};

use crate::adapter::Unbuildable;
use crate::adapter::{
    by_id_else, looked, BoxFuture, Intake, LookFailed, Looked, Operation, PayerAnswer,
    RefundedAnswer, Request,
};
use crate::client::{Client, Mapping};
use crate::lookup::LookupError;

pub use search::MAX_PAGES;

/// The actions only the Stripe mapping serves: the reference protocol has no charges, so
/// the capability guard refuses them while payments are not spoken as Stripe (the
/// payments provider's spec, `fleet_core::catalogue::provider_spec::PAYMENTS`, says so).
pub const ONLY_STRIPE: &[Action] = provider_spec::PAYMENTS.only_stripe;

/// The Stripe mapping.
#[derive(Debug)]
pub enum Stripe {}

/// A pooled client for Stripe.
pub type StripeClient = Client<Stripe>;

/// The form of `POST /v1/refunds` for `op`: the payment refunded, the amount, and the
/// operation and tenant in metadata. Stripe refunds in the payment's currency and takes
/// no free-text reason, so neither is sent.
pub fn refund_form(op: &Operation<'_>) -> Result<Map<String, Value>, Unbuildable> {
    let unbuildable = Unbuildable(op.action.wire_name());
    if op.action != Action::RefundCreate {
        return Err(unbuildable);
    }
    let p: RefundPayload = op.payload()?;
    let refunded = Refunded::parse(&p.payment_id).ok_or(unbuildable)?;
    let amount = p.amount_minor.to_string();
    let fields = [(refunded.field(), refunded.id()), ("amount", &amount)];
    Ok(create::form(op, &fields, None))
}

impl Client<Stripe> {
    /// `GET /v1/refunds/{id}` (strongly consistent); `None` on 404.
    pub async fn get_refund(&self, id: &str) -> Result<Option<Value>, LookupError> {
        self.api().object(&["v1", "refunds", id]).await
    }

    /// Every refund of `refunded`, newest first, paging `GET /v1/refunds` to its end;
    /// an error when it has more than [`MAX_PAGES`] pages.
    pub async fn refunds_of(&self, refunded: Refunded<'_>) -> Result<Vec<Value>, LookupError> {
        self.list_all(&["v1", "refunds"], &[(refunded.field(), refunded.id())])
            .await
    }
}

impl Mapping for Stripe {
    const PROVIDER: ProviderName = provider_spec::PAYMENTS.name;

    fn speaks(dialect: Dialect) -> bool {
        matches!(dialect, Dialect::Stripe { .. })
    }

    /// One create, whatever the action: its form posted under the operation's key
    /// ([`create`]).
    fn request(op: &Operation<'_>) -> Result<Request, Unbuildable> {
        let (object, form) = match op.action {
            Action::ChargeCreate => ("payment_intents", charge::charge_form(op)?),
            Action::PaymentCreate => ("transfers", transfer::transfer_form(op)?),
            _ => ("refunds", refund_form(op)?),
        };
        Ok(create::post(object, &form))
    }

    /// By the refund's id when known; not there, or no id yet: the refunds of the
    /// payment, matched on `metadata[fleet_operation]`.
    fn look_up<'a>(
        client: &'a StripeClient,
        op: &'a Operation<'a>,
        external_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Looked, LookFailed>> {
        if op.action == Action::ChargeCreate {
            return charge::look_up(client, op, external_id);
        }
        if op.action == Action::PaymentCreate {
            return transfer::look_up(client, op, external_id);
        }
        let payments = async {
            let via = "metadata";
            let payload: RefundPayload = op.lookup_payload(via, "a refund")?;
            let Some(refunded) = Refunded::parse(&payload.payment_id) else {
                return Err(LookFailed {
                    via,
                    error: LookupError::Body("the payment is not a Stripe id".into()),
                });
            };
            looked(via, client.refunds_of(refunded).await)
        };
        Box::pin(by_id_else(
            external_id.map(|id| client.get_refund(id)),
            payments,
        ))
    }

    /// Stripe's rules (`fleet_core::stripe`); a refused key is also said in the log as the
    /// configuration error it is (its status only: never the key, never the body).
    fn classify(op: &Operation<'_>, call: &CallResult) -> Outcome {
        if let CallResult::Answer(answer) = call {
            if matches!(answer.status, 401 | 403) {
                tracing::error!(
                    status = answer.status,
                    reference = op.subject.reference,
                    "Stripe refused the API key: PAYMENTS_API_KEY is wrong or lacks a \
                     permission (a configuration error); the operation is escalated"
                );
            }
        }
        match op.action {
            Action::PaymentCreate => classify_transfer(call),
            Action::ChargeCreate => classify_charge(call),
            _ => classify_refund(call),
        }
    }

    /// A charge's customer and payment method ([`charge::look_up_payer`]); a payment's
    /// connected account and its payout account ([`transfer::look_up_payee`]).
    fn look_up_payer<'a>(
        client: &'a StripeClient,
        intent: Intake<'a>,
    ) -> Option<BoxFuture<'a, PayerAnswer>> {
        if intent.action == Action::PaymentCreate {
            return transfer::look_up_payee(client, intent);
        }
        charge::look_up_payer(client, intent)
    }

    /// A refund's PaymentIntent or Charge ([`refundable::look_up_refunded`]).
    fn look_up_refunded<'a>(
        client: &'a StripeClient,
        intent: Intake<'a>,
    ) -> Option<BoxFuture<'a, RefundedAnswer>> {
        refundable::look_up_refunded(client, intent)
    }

    fn read_lookup(op: &Operation<'_>, via: &str, objects: &[Value]) -> Reading {
        match op.action {
            Action::PaymentCreate => read_transfers(op.idempotency_key, via, objects),
            Action::ChargeCreate => read_payment_intents(op.idempotency_key, via, objects),
            _ => read_refunds(op.idempotency_key, via, objects),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::client::request_of;
    use serde_json::json;

    use super::*;

    fn refund(payload: &Value) -> Operation<'_> {
        crate::adapter::test_operation(Action::RefundCreate, payload)
    }

    #[test]
    fn a_refund_is_one_form_post_under_the_operations_key() {
        let payload = json!({"payment_id": "pi_3Abc", "amount_minor": 1250,
                             "currency": "EUR", "reason": "damaged"});
        let request = request_of::<Stripe>(&refund(&payload)).unwrap();
        crate::stripe::create::assert_form_post(&request, "refunds");
        assert_eq!(
            request.body,
            json!({
                "payment_intent": "pi_3Abc",
                "amount": "1250",
                "metadata[fleet_operation]": "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8",
                "metadata[fleet_tenant]": "acme",
            })
        );
        let by_charge = json!({"payment_id": "ch_9", "amount_minor": 1,
                               "currency": "EUR", "reason": "x"});
        assert_eq!(
            request_of::<Stripe>(&refund(&by_charge)).unwrap().body["charge"],
            "ch_9"
        );
    }

    #[test]
    fn payments_spoken_as_stripe_refuses_at_intake_what_it_does_not_serve() {
        use fleet_core::catalogue::{guard, Dialect};
        let mut configs = crate::ProviderConfigs::all_at("http://127.0.0.1:9", "sk_x", 1, 0, 0);
        configs.provider_mut("payments").dialect = Dialect::Stripe { search: true };
        let caps = configs.capabilities();
        // payment.create is served (a transfer); an action of another provider is not.
        assert_eq!(guard(Action::PaymentCreate, "payments", 60, &caps), Ok(()));
        assert_eq!(
            guard(Action::CrmDealCreate, "payments", 60, &caps),
            Err("unsupported_provider")
        );
        assert_eq!(guard(Action::RefundCreate, "payments", 60, &caps), Ok(()));
        let reference = crate::ProviderConfigs::all_at("http://127.0.0.1:9", "sk_x", 1, 0, 0);
        assert_eq!(
            guard(
                Action::PaymentCreate,
                "payments",
                60,
                &reference.capabilities()
            ),
            Ok(())
        );
    }

    #[test]
    fn what_stripe_cannot_refund_makes_no_request() {
        let payload = json!({"payment_id": "pay_1", "amount_minor": 1,
                             "currency": "EUR", "reason": "x"});
        assert_eq!(
            request_of::<Stripe>(&refund(&payload)),
            Err(Unbuildable("refund.create"))
        );
        // A payment whose payee is not a connected account.
        let payment = Operation {
            action: Action::PaymentCreate,
            ..refund(&payload)
        };
        assert!(request_of::<Stripe>(&payment).is_err());
    }
}
