//! `payment.create` spoken as Stripe: a Connect transfer, `POST /v1/transfers`, from the
//! platform's balance to the beneficiary's connected account, form-encoded, under the
//! operation's idempotency key. A transfer whose answer was lost is found again by its id
//! when known, else by paging the invoice's transfer group and matching
//! `metadata[fleet_operation]`. What the answers and objects prove is read by
//! `fleet_core::stripe::transfer`.
//!
//! Stripe's reference: <https://docs.stripe.com/api/transfers/create>,
//! <https://docs.stripe.com/api/transfers/list>.

use fleet_core::actions::payment_create::PaymentPayload;
use fleet_core::stripe::transfer::{account_evidence, destination};
use fleet_core::Action;
use serde_json::{Map, Value};

use super::create::{form, money};
use super::StripeClient;
use crate::adapter::{
    by_id_else, looked, BoxFuture, Intake, LookFailed, Looked, Operation, PayerAnswer, Unbuildable,
};
use crate::lookup::LookupError;

/// The form of `POST /v1/transfers` for `op`: the amount in the currency's minor unit,
/// the currency in lower case as Stripe writes it, the connected account paid (the
/// payee's id, `acct_…`), the invoice as the transfer group, and the operation, tenant and
/// invoice in metadata. Any other payee id makes no request.
pub fn transfer_form(op: &Operation<'_>) -> Result<Map<String, Value>, Unbuildable> {
    let unbuildable = Unbuildable(op.action.wire_name());
    if op.action != Action::PaymentCreate {
        return Err(unbuildable);
    }
    let p: PaymentPayload = op.payload()?;
    let account = destination(&p.beneficiary_id).ok_or(unbuildable)?;
    let [amount, currency] = money(p.amount_minor, &p.currency);
    let fields = [
        ("amount", amount.as_str()),
        ("currency", &currency),
        ("destination", account),
        ("transfer_group", &p.invoice_id),
    ];
    Ok(form(op, &fields, Some(&p.invoice_id)))
}

impl StripeClient {
    /// `GET /v1/transfers/{id}` (strongly consistent); `None` on 404.
    pub async fn get_transfer(&self, id: &str) -> Result<Option<Value>, LookupError> {
        self.api().object(&["v1", "transfers", id]).await
    }

    /// `GET /v1/accounts/{id}`: the connected account, with the payout accounts the
    /// platform may see; `None` on 404.
    pub async fn get_account(&self, id: &str) -> Result<Option<Value>, LookupError> {
        self.api().object(&["v1", "accounts", id]).await
    }

    /// Every transfer of `group`, paging `GET /v1/transfers?transfer_group=…` to its end.
    pub async fn transfers_in_group(&self, group: &str) -> Result<Vec<Value>, LookupError> {
        self.list_all(&["v1", "transfers"], &[("transfer_group", group)])
            .await
    }
}

/// Who a payment's transfer pays, read now: the payee's connected account
/// (`GET /v1/accounts/{beneficiary_id}`), judged by
/// `fleet_core::stripe::transfer::account_evidence`, at intake (the evidence the approver
/// is shown) and again before the transfer (another payout account since cancels it).
/// `None` for a payload that is not a payment to a connected account: nothing to read.
pub fn look_up_payee<'a>(
    client: &'a StripeClient,
    intent: Intake<'a>,
) -> Option<BoxFuture<'a, PayerAnswer>> {
    let tenant = intent.tenant;
    let id = intent.payload.get("beneficiary_id")?.as_str()?;
    let account = destination(id)?;
    Some(Box::pin(async move {
        let answer = client.for_tenant(tenant).get_account(account).await?;
        Ok(Ok(account_evidence(
            account,
            answer.as_ref(),
            chrono::Utc::now(),
        )))
    }))
}

/// By the transfer's id when known; not there, or no id yet: the invoice's transfer
/// group, matched on `metadata[fleet_operation]`.
pub fn look_up<'a>(
    client: &'a StripeClient,
    op: &'a Operation<'a>,
    external_id: Option<&'a str>,
) -> BoxFuture<'a, Result<Looked, LookFailed>> {
    let group = async {
        let via = "transfer_group";
        let payload: PaymentPayload = op.lookup_payload(via, "a payment")?;
        looked(via, client.transfers_in_group(&payload.invoice_id).await)
    };
    Box::pin(by_id_else(
        external_id.map(|id| client.get_transfer(id)),
        group,
    ))
}

#[cfg(test)]
mod tests {
    use crate::client::request_of;
    use serde_json::json;

    use super::*;
    use crate::stripe::Stripe;

    fn payment(payload: &Value) -> Operation<'_> {
        crate::adapter::test_operation(Action::PaymentCreate, payload)
    }

    #[test]
    fn a_payment_is_one_transfer_to_the_connected_account_under_the_operations_key() {
        let payload = json!({"invoice_id": "inv_9182", "beneficiary_id": "acct_1Vendor77",
                             "amount_minor": 1250000, "currency": "KZT"});
        let request = request_of::<Stripe>(&payment(&payload)).unwrap();
        crate::stripe::create::assert_form_post(&request, "transfers");
        assert_eq!(
            request.body,
            json!({
                "amount": "1250000",
                "currency": "kzt",
                "destination": "acct_1Vendor77",
                "transfer_group": "inv_9182",
                "metadata[fleet_operation]": "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8",
                "metadata[fleet_tenant]": "acme",
                "metadata[fleet_invoice]": "inv_9182",
            })
        );
    }

    #[test]
    fn a_payee_that_is_not_a_connected_account_makes_no_request() {
        let payload = json!({"invoice_id": "inv_9182", "beneficiary_id": "vendor_77",
                             "amount_minor": 100, "currency": "KZT"});
        assert_eq!(
            request_of::<Stripe>(&payment(&payload)),
            Err(Unbuildable("payment.create"))
        );
    }

    #[test]
    fn payments_spoken_as_stripe_admit_a_payment_at_intake() {
        use fleet_core::catalogue::{guard, Dialect};
        let mut configs = crate::ProviderConfigs::all_at("http://127.0.0.1:9", "sk_x", 1, 0, 0);
        configs.provider_mut("payments").dialect = Dialect::Stripe { search: true };
        let caps = configs.capabilities();
        assert_eq!(guard(Action::PaymentCreate, "payments", 60, &caps), Ok(()));
        assert_eq!(guard(Action::RefundCreate, "payments", 60, &caps), Ok(()));
    }
}
