//! A refund's payment read at intake: the PaymentIntent
//! ([`GET /v1/payment_intents/{id}`](https://docs.stripe.com/api/payment_intents/retrieve),
//! its latest charge expanded for the card and its customer for the name and e-mail) and
//! its refunds, or the Charge
//! ([`GET /v1/charges/{id}`](https://docs.stripe.com/api/charges/retrieve), its customer
//! expanded), judged by `fleet_core::stripe::refundable`. One read each, in the tenant's
//! account: the customer comes with its payment, so what the approver sees of it is what
//! Stripe said in the same answer.

use fleet_core::actions::refund_create::RefundPayload;
use fleet_core::stripe::refundable::refundable_of;
use fleet_core::stripe::Refunded;
use fleet_core::Action;
use serde_json::Value;

use super::StripeClient;
use crate::adapter::{BoxFuture, Intake, RefundedAnswer};
use crate::lookup::LookupError;

impl StripeClient {
    /// The payment `refunded` names, with what was refunded of it; `None` on 404.
    pub async fn refundable(&self, refunded: Refunded<'_>) -> RefundedAnswer {
        let payment = match refunded {
            Refunded::PaymentIntent(id) => {
                self.api()
                    .get_json(
                        &["v1", "payment_intents", id],
                        &[("expand[]", "latest_charge"), ("expand[]", "customer")],
                    )
                    .await
            }
            Refunded::Charge(id) => {
                self.api()
                    .get_json(&["v1", "charges", id], &[("expand[]", "customer")])
                    .await
            }
        };
        let payment = match payment {
            Ok(payment) => payment,
            Err(LookupError::Status(404)) => return Ok(None),
            Err(e) => return Err(e),
        };
        // A PaymentIntent's refunds are listed (a Charge counts its own); one that was
        // never paid has nothing to list.
        let paid = payment.get("status").and_then(Value::as_str) == Some("succeeded");
        let refunds = match refunded {
            Refunded::PaymentIntent(_) if paid => self.refunds_of(refunded).await?,
            _ => Vec::new(),
        };
        let mut found = refundable_of(&payment, &refunds)
            .ok_or_else(|| LookupError::Body("not a PaymentIntent or Charge".into()))?;
        // Read with `Stripe-Account`: it is that connected account's.
        found.account = self.account().map(str::to_owned);
        Ok(Some(found))
    }
}

/// The payment of a refund's payload, for the intake, read for `tenant` (inside its
/// connected account, where it has one).
pub fn look_up_refunded<'a>(
    client: &'a StripeClient,
    intent: Intake<'a>,
) -> Option<BoxFuture<'a, RefundedAnswer>> {
    let tenant = intent.tenant;
    let payload: RefundPayload = intent.payload(Action::RefundCreate)?;
    Some(Box::pin(async move {
        match Refunded::parse(&payload.payment_id) {
            Some(refunded) => client.for_tenant(tenant).refundable(refunded).await,
            // Not a Stripe id: Stripe has no such payment.
            None => Ok(None),
        }
    }))
}
