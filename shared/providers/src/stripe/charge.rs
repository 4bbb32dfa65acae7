//! `charge.create` spoken as Stripe: one confirmed, off-session
//! [`POST /v1/payment_intents`](https://docs.stripe.com/api/payment_intents/create) under the
//! operation's key, the reads of who is charged (the customer and the payment method, at
//! intake and again before the charge) and the lookup of the PaymentIntent. What the
//! answers prove is `fleet_core::stripe::charge`.

use fleet_core::actions::charge_create::ChargePayload;
use fleet_core::stripe::charge::payer_evidence;
use fleet_core::Action;
use serde_json::{json, Map, Value};

use super::create::{form, money};
use super::StripeClient;
use crate::adapter::{
    by_id_else, looked, BoxFuture, Intake, LookFailed, Looked, Operation, Unbuildable,
};
use crate::lookup::LookupError;

/// Who a charge takes money from, as Stripe describes them now; the outer error: Stripe
/// gave no answer.
pub use crate::adapter::PayerAnswer;

/// The form of `POST /v1/payment_intents` for `op`: the amount in the currency's minor
/// unit, the currency in lower case (Stripe's), the customer and the payment method,
/// confirmed at once and off session (nobody is there to authenticate), and the operation,
/// tenant and invoice in metadata.
pub fn charge_form(op: &Operation<'_>) -> Result<Map<String, Value>, Unbuildable> {
    if op.action != Action::ChargeCreate {
        return Err(Unbuildable(op.action.wire_name()));
    }
    let p: ChargePayload = op.payload()?;
    let [amount, currency] = money(p.amount_minor, &p.currency);
    let fields = [
        ("amount", amount.as_str()),
        ("currency", &currency),
        ("customer", &p.customer),
        ("payment_method", &p.payment_method),
        ("confirm", "true"),
        ("off_session", "true"),
    ];
    Ok(form(op, &fields, Some(&p.invoice_id)))
}

impl StripeClient {
    /// `GET /v1/payment_intents/{id}`; `None` on 404.
    pub async fn get_payment_intent(&self, id: &str) -> Result<Option<Value>, LookupError> {
        self.api().object(&["v1", "payment_intents", id]).await
    }

    /// Who `payload` charges, read now: `GET /v1/customers/{customer}` and
    /// `GET /v1/payment_methods/{payment_method}` (which also reads a `card_…` or `src_…`),
    /// judged by `fleet_core::stripe::charge::payer_evidence`.
    pub async fn payer(&self, payload: &ChargePayload) -> PayerAnswer {
        let customer = self
            .api()
            .object(&["v1", "customers", &payload.customer])
            .await?;
        let method = self
            .api()
            .object(&["v1", "payment_methods", &payload.payment_method])
            .await?;
        let answer = json!({"customer": customer, "payment_method": method});
        Ok(payer_evidence(
            &payload.customer,
            &payload.payment_method,
            &answer,
            chrono::Utc::now(),
        ))
    }
}

/// The payer of `op`'s payload (a charge), for the intake and execute.
pub fn look_up_payer<'a>(
    client: &'a StripeClient,
    intent: Intake<'a>,
) -> Option<BoxFuture<'a, PayerAnswer>> {
    let payload: ChargePayload = intent.payload(Action::ChargeCreate)?;
    Some(Box::pin(async move {
        client.for_tenant(intent.tenant).payer(&payload).await
    }))
}

/// By the PaymentIntent's id when known; not there, or no id yet: Stripe's Search API by
/// `metadata[fleet_operation]` (`PAYMENTS_STRIPE_SEARCH=on`), else the customer's
/// PaymentIntents, paged ([`StripeClient::payment_intents_carrying`]); either way matched
/// on `metadata[fleet_operation]` when read.
pub fn look_up<'a>(
    client: &'a StripeClient,
    op: &'a Operation<'a>,
    external_id: Option<&'a str>,
) -> BoxFuture<'a, Result<Looked, LookFailed>> {
    let carrying = async {
        let payload: ChargePayload = op.lookup_payload("metadata", "a charge")?;
        let customer = [("customer", payload.customer.as_str())];
        let (via, found) = client
            .payment_intents_carrying(op.idempotency_key, &customer)
            .await;
        looked(via, found)
    };
    let by_id = external_id.map(|id| client.get_payment_intent(id));
    Box::pin(by_id_else(by_id, carrying))
}

#[cfg(test)]
mod tests {
    use crate::client::request_of;
    use serde_json::json;

    use super::*;
    use crate::stripe::Stripe;

    #[test]
    fn a_charge_is_one_confirmed_off_session_form_post_under_the_operations_key() {
        let payload = json!({"invoice_id": "inv_7", "customer": "cus_9", "payment_method": "pm_5",
                             "amount_minor": 1250, "currency": "EUR"});
        let op = crate::adapter::test_operation(Action::ChargeCreate, &payload);
        let request = request_of::<Stripe>(&op).unwrap();
        crate::stripe::create::assert_form_post(&request, "payment_intents");
        assert_eq!(
            request.body,
            json!({
                "amount": "1250",
                "currency": "eur",
                "customer": "cus_9",
                "payment_method": "pm_5",
                "confirm": "true",
                "off_session": "true",
                "metadata[fleet_operation]": "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8",
                "metadata[fleet_tenant]": "acme",
                "metadata[fleet_invoice]": "inv_7",
            })
        );
        let refund = Operation {
            action: Action::RefundCreate,
            ..op
        };
        assert!(charge_form(&refund).is_err());
    }

    #[test]
    fn a_charge_is_served_only_while_payments_are_spoken_as_stripe() {
        use fleet_core::catalogue::{guard, Dialect};
        let reference = crate::ProviderConfigs::all_at("http://127.0.0.1:9", "sk_x", 1, 0, 0);
        assert_eq!(
            guard(
                Action::ChargeCreate,
                "payments",
                60,
                &reference.capabilities()
            ),
            Err("unsupported_provider")
        );
        let mut stripe = reference.clone();
        stripe.provider_mut("payments").dialect = Dialect::Stripe { search: true };
        assert_eq!(
            guard(Action::ChargeCreate, "payments", 60, &stripe.capabilities()),
            Ok(())
        );
        // The reference protocol's other actions are untouched.
        assert_eq!(
            guard(
                Action::RefundCreate,
                "payments",
                60,
                &reference.capabilities()
            ),
            Ok(())
        );
    }
}
