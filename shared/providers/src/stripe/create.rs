//! The one request shell of every create at Stripe: the object's own fields, then the
//! metadata every object the fleet makes there carries (the operation's key, which is how
//! it is found again, its tenant, and the invoice where there is one), posted form-encoded
//! under the operation's key. Charges, transfers and refunds differ only in their path and
//! their fields.
//!
//! Stripe's reference: <https://docs.stripe.com/api/metadata>,
//! <https://docs.stripe.com/api/idempotent_requests>.

use fleet_core::stripe::charge::INVOICE_METADATA;
use fleet_core::stripe::{OPERATION_METADATA, TENANT_METADATA};
use reqwest::Method;
use serde_json::{Map, Value};

use crate::adapter::{Operation, Request};

/// A create's form: `fields`, then `metadata[fleet_operation]`, `metadata[fleet_tenant]`
/// and, for an action that names one, `metadata[fleet_invoice]`.
pub fn form(
    op: &Operation<'_>,
    fields: &[(&str, &str)],
    invoice: Option<&str>,
) -> Map<String, Value> {
    let metadata = [
        (OPERATION_METADATA, Some(op.idempotency_key)),
        (TENANT_METADATA, Some(op.tenant)),
        (INVOICE_METADATA, invoice),
    ];
    let metadata = metadata
        .into_iter()
        .filter_map(|(key, value)| Some((format!("metadata[{key}]"), value?)));
    fields
        .iter()
        .map(|(name, value)| ((*name).to_owned(), *value))
        .chain(metadata)
        .map(|(name, value)| (name, Value::from(value)))
        .collect()
}

/// An amount and its currency as Stripe takes them: the minor units, and the currency in
/// lower case.
pub fn money(amount_minor: i64, currency: &str) -> [String; 2] {
    [amount_minor.to_string(), currency.to_ascii_lowercase()]
}

/// The one request of a create: `form` posted to `/v1/{object}`, the same on every attempt
/// (the shell sends it under the operation's key, `crate::client::request_of`).
pub fn post(object: &str, form: &Map<String, Value>) -> Request {
    Request::new(Method::POST, &["v1", object], form).as_form()
}

/// Asserts that `request` is the one create of `/v1/{object}`: posted form-encoded under
/// the key of the adapters' test operation (`crate::adapter::test_operation`).
#[cfg(test)]
pub(crate) fn assert_form_post(request: &Request, object: &str) {
    assert_eq!(request.method, Method::POST);
    assert_eq!(request.path, ["v1", object]);
    assert_eq!(request.encoding, crate::request::Encoding::Form);
    let key = request.idempotency_key.as_deref();
    assert_eq!(key, Some("op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8"));
}
