//! Mapping for the reference orders API: serves `order.status.change`. A transition
//! carries a `from` precondition and our `transition_ref` (the operation id); the order
//! remembers the last transition applied, so `GET /v1/orders/<id>` settles an uncertain
//! attempt. No idempotency keys: the precondition keeps a transition from applying twice.

use fleet_core::actions::order_status_change::OrderStatusChangePayload;
use fleet_core::catalogue::provider_spec;
use fleet_core::{Action, ProviderName};
use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::adapter::{looked_one, BoxFuture, LookFailed, Looked, Operation, Request, Unbuildable};
use crate::client::{Client, Mapping};
use crate::lookup::LookupError;

/// `POST /v1/orders/<id>/transitions` body; `transition_ref` is the operation id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransitionRequest {
    pub from: String,
    pub to: String,
    pub transition_ref: String,
    pub reason: String,
}

/// The orders API's mapping.
#[derive(Debug)]
pub enum Orders {}

/// A pooled client for the orders API.
pub type OrdersClient = Client<Orders>;

impl Client<Orders> {
    /// `GET /v1/orders/{id}` (strongly consistent); `None` on 404.
    pub async fn get_order(&self, id: &str) -> Result<Option<Value>, LookupError> {
        self.api().object(&["v1", "orders", id]).await
    }
}

impl Mapping for Orders {
    const PROVIDER: ProviderName = provider_spec::ORDERS.name;

    fn request(op: &Operation<'_>) -> Result<Request, Unbuildable> {
        match op.action {
            Action::OrderStatusChange => {
                let p: OrderStatusChangePayload = op.payload()?;
                let body = TransitionRequest {
                    from: p.from,
                    to: p.to,
                    transition_ref: op.subject.reference.to_owned(),
                    reason: p.reason,
                };
                Ok(Request::new(
                    Method::POST,
                    &["v1", "orders", op.target()?, "transitions"],
                    &body,
                ))
            }
            other => Err(Unbuildable(other.wire_name())),
        }
    }

    /// The order the transition is about.
    fn look_up<'a>(
        client: &'a OrdersClient,
        op: &'a Operation<'a>,
        _external_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Looked, LookFailed>> {
        Box::pin(async move {
            match op.target() {
                Ok(order_id) => looked_one("order", client.get_order(order_id).await),
                Err(_) => Ok(Looked {
                    via: "order",
                    objects: Vec::new(),
                }),
            }
        })
    }
}
