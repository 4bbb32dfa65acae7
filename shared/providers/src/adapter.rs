//! What a provider adapter works with for the actions its provider serves: the operation
//! it builds the one side-effecting request of, from its approved snapshot, and what
//! looking the effect up again, read-only, returned. What the answers mean
//! (classification, what a lookup proves) is pure and belongs to the action's catalogue
//! entry in `fleet_core`; an adapter only speaks its provider's HTTP
//! ([`crate::client`]: one shell, a mapping per provider).

use std::future::Future;
use std::pin::Pin;

use fleet_core::{Action, Subject};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::lookup::LookupError;
pub use crate::request::Request;

/// A future an adapter returns (adapters are used as trait objects).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One operation, as an adapter sees it.
#[derive(Debug, Clone, Copy)]
pub struct Operation<'a> {
    pub action: Action,
    /// The tenant the operation belongs to (a provider that records it is told).
    pub tenant: &'a str,
    pub subject: Subject<'a>,
    /// The key every attempt of the operation is sent with (its operation id).
    pub idempotency_key: &'a str,
    /// The payee's version the approver was shown (kept at intake), for a provider that
    /// makes a create conditional on it; `None` sends no precondition.
    pub payee_version: Option<i64>,
}

impl Operation<'_> {
    /// The approved payload as the action's type; `Unbuildable` when it does not fit
    /// (never for a row prepare wrote, which validated the same shape).
    pub fn payload<P: DeserializeOwned>(&self) -> Result<P, Unbuildable> {
        P::deserialize(self.subject.payload).map_err(|_| Unbuildable(self.action.wire_name()))
    }

    /// The approved payload as the action's type, for a lookup asking `via`: one that
    /// does not fit (never for a row prepare wrote) fails the lookup, saying it is not
    /// `what` ("a refund").
    pub(crate) fn lookup_payload<P: DeserializeOwned>(
        &self,
        via: &'static str,
        what: &str,
    ) -> Result<P, LookFailed> {
        self.payload().map_err(|_| LookFailed {
            via,
            error: LookupError::Body(format!("the stored payload is not {what}")),
        })
    }

    /// The target an action that requires one names.
    pub fn target(&self) -> Result<&str, Unbuildable> {
        self.subject
            .target
            .ok_or(Unbuildable(self.action.wire_name()))
    }
}

/// An intent as the intake reads what it names at the provider (and execute again, right
/// before its call): whose it is, its action and its payload.
#[derive(Debug, Clone, Copy)]
pub struct Intake<'a> {
    pub tenant: &'a str,
    pub action: Action,
    pub payload: &'a Value,
}

impl Intake<'_> {
    /// The payload as `of`'s type; `None` when the intent is of another action (or, never
    /// for a validated intent, does not fit).
    pub(crate) fn payload<P: DeserializeOwned>(&self, of: Action) -> Option<P> {
        (self.action == of).then(|| P::deserialize(self.payload).ok())?
    }
}

/// The stored snapshot does not make a request of its action (or the adapter does not
/// serve the action): a bug or tampering, never a reason to guess.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the stored snapshot does not make a {0} request")]
pub struct Unbuildable(pub &'static str);

/// What a lookup returned: how it asked (`via`, for the evidence) and the objects (a
/// search's list, or the one object read by id, or none).
#[derive(Debug, Clone, PartialEq)]
pub struct Looked {
    pub via: &'static str,
    pub objects: Vec<Value>,
}

/// A lookup that gave no answer, and how it asked.
#[derive(Debug)]
pub struct LookFailed {
    pub via: &'static str,
    pub error: LookupError,
}

/// A payee lookup's answer: the provider's object, `None` on 404.
pub type PayeeAnswer = Result<Option<Value>, LookupError>;

/// What a refund's payment is now, at a provider that describes it (a Stripe
/// PaymentIntent or Charge): `None` on 404; the error: no answer.
pub type RefundedAnswer = Result<Option<fleet_core::stripe::refundable::Refundable>, LookupError>;

/// A payer lookup's answer: who is charged, as evidence, or why they cannot be
/// (`fleet_core::stripe::charge::PayerRefusal`); the outer error: no answer.
pub type PayerAnswer = Result<
    Result<fleet_core::payee::PayeeEvidence, fleet_core::stripe::charge::PayerRefusal>,
    LookupError,
>;

/// A lookup by `via`: the objects, or the failure.
pub(crate) fn looked(
    via: &'static str,
    objects: Result<Vec<Value>, LookupError>,
) -> Result<Looked, LookFailed> {
    objects
        .map(|objects| Looked { via, objects })
        .map_err(|error| LookFailed { via, error })
}

/// A lookup by the effect's id when it is known, `read` being that read (strongly
/// consistent); not there (404), or no id yet: `otherwise`, the search the lag rules judge.
pub(crate) async fn by_id_else(
    read: Option<impl Future<Output = Result<Option<Value>, LookupError>>>,
    otherwise: impl Future<Output = Result<Looked, LookFailed>>,
) -> Result<Looked, LookFailed> {
    if let Some(read) = read {
        match read.await {
            Ok(None) => {}
            other => return looked_one("external_id", other),
        }
    }
    otherwise.await
}

/// A read by id as a lookup: the object, or none on 404.
pub(crate) fn looked_one(
    via: &'static str,
    object: Result<Option<Value>, LookupError>,
) -> Result<Looked, LookFailed> {
    looked(via, object.map(|o| o.into_iter().collect()))
}

/// An operation of `action` on `payload`, for the adapters' unit tests: the tenant
/// `acme`, and its operation id as reference and key.
#[cfg(test)]
pub(crate) fn test_operation(action: Action, payload: &Value) -> Operation<'_> {
    const ID: &str = "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8";
    Operation {
        action,
        tenant: "acme",
        subject: Subject {
            reference: ID,
            target: None,
            payload,
        },
        idempotency_key: ID,
        payee_version: None,
    }
}
