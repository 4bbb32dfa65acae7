//! The orders and the transitions applied to them.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::api_error::ApiError;
use crate::fields::Fields;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Order {
    pub id: String,
    pub status: String,
    pub version: u64,
    pub last_transition_ref: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A validated `POST /v1/orders/{id}/transitions` body.
#[derive(Clone, Debug)]
pub struct Transition {
    pub from: String,
    pub to: String,
    pub transition_ref: String,
}

impl Transition {
    pub fn validate(body: &Value) -> Result<Transition, ApiError> {
        let fields = Fields::of(body, &["from", "to", "transition_ref", "reason"])?;
        fields.text("reason")?;
        Ok(Transition {
            from: fields.text("from")?,
            to: fields.text("to")?,
            transition_ref: fields.text("transition_ref")?,
        })
    }
}

/// Why a transition did not apply.
#[derive(Debug, PartialEq)]
pub enum Refused {
    NotFound,
    StatusConflict {
        current_status: String,
        last_transition_ref: Option<String>,
    },
}

#[derive(Debug, Default)]
pub struct OrderStore {
    orders: HashMap<String, Order>,
    /// How many transitions each `transition_ref` applied (the effect counter).
    applied: HashMap<String, usize>,
}

impl OrderStore {
    pub fn create(&mut self, id: Option<String>, status: String, now: DateTime<Utc>) -> Order {
        let id = id.unwrap_or_else(|| format!("ord_{}", ulid::Ulid::new()));
        let order = Order {
            id: id.clone(),
            status,
            version: 1,
            last_transition_ref: None,
            created_at: now,
            updated_at: now,
        };
        self.orders.insert(id, order.clone());
        order
    }

    pub fn get(&self, id: &str) -> Option<&Order> {
        self.orders.get(id)
    }

    /// Applies `t` if the order is at `t.from`.
    pub fn transition(
        &mut self,
        id: &str,
        t: Transition,
        now: DateTime<Utc>,
    ) -> Result<Order, Refused> {
        let order = self.orders.get_mut(id).ok_or(Refused::NotFound)?;
        if order.status != t.from {
            return Err(Refused::StatusConflict {
                current_status: order.status.clone(),
                last_transition_ref: order.last_transition_ref.clone(),
            });
        }
        *self.applied.entry(t.transition_ref.clone()).or_default() += 1;
        Ok(Self::moved(order, t.to, t.transition_ref, now))
    }

    /// Moves the order whatever its status ("another user"); not counted as an effect of
    /// any operation.
    pub fn force(
        &mut self,
        id: &str,
        status: String,
        transition_ref: String,
        now: DateTime<Utc>,
    ) -> Option<Order> {
        let order = self.orders.get_mut(id)?;
        Some(Self::moved(order, status, transition_ref, now))
    }

    fn moved(
        order: &mut Order,
        status: String,
        transition_ref: String,
        now: DateTime<Utc>,
    ) -> Order {
        order.status = status;
        order.version += 1;
        order.last_transition_ref = Some(transition_ref);
        order.updated_at = now;
        order.clone()
    }

    /// Transitions applied under this `transition_ref`.
    pub fn count_with_ref(&self, transition_ref: &str) -> usize {
        self.applied.get(transition_ref).copied().unwrap_or(0)
    }

    /// Transitions applied in all.
    pub fn count(&self) -> usize {
        self.applied.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(from: &str, to: &str, r: &str) -> Transition {
        Transition {
            from: from.into(),
            to: to.into(),
            transition_ref: r.into(),
        }
    }

    #[test]
    fn a_transition_applies_only_from_its_precondition_and_is_counted_by_its_ref() {
        let mut store = OrderStore::default();
        let now = Utc::now();
        store.create(Some("ord_1".into()), "paid".into(), now);
        let moved = store
            .transition("ord_1", t("paid", "fulfilled", "op_a"), now)
            .unwrap();
        assert_eq!(
            (
                moved.status.as_str(),
                moved.version,
                moved.last_transition_ref.as_deref()
            ),
            ("fulfilled", 2, Some("op_a"))
        );
        assert_eq!(
            store.transition("ord_1", t("paid", "fulfilled", "op_a"), now),
            Err(Refused::StatusConflict {
                current_status: "fulfilled".into(),
                last_transition_ref: Some("op_a".into())
            })
        );
        assert_eq!(
            store.transition("ord_9", t("paid", "fulfilled", "op_b"), now),
            Err(Refused::NotFound)
        );
        assert_eq!((store.count_with_ref("op_a"), store.count()), (1, 1));
        store
            .force("ord_1", "shipped".into(), "other_1".into(), now)
            .unwrap();
        assert_eq!(
            store.count(),
            1,
            "another user's change is not an operation's effect"
        );
    }
}
