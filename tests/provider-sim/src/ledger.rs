//! The provider's objects (payments, refunds) and the ledger that holds each kind.
//!
//! A ledger entry is an effect: it exists only because a create was executed. Entries are
//! never removed except by `POST /_sim/reset`, because the effect counters are what tests
//! assert "exactly once" with.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

/// Status of a payment or refund as the provider reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ObjectStatus {
    Succeeded,
    Pending,
    Failed,
}

#[derive(Clone, Debug, Serialize)]
pub struct Payment {
    pub id: String,
    pub status: ObjectStatus,
    pub amount_minor: i64,
    pub currency: String,
    pub beneficiary_id: String,
    pub invoice_id: String,
    pub reference: String,
    /// Customer data a real provider echoes in every answer (the account holder's name
    /// on file, a description); the fleet has no use for it and must not keep it.
    pub beneficiary_name: String,
    pub description: String,
    pub created_at: DateTime<Utc>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Refund {
    pub id: String,
    pub status: ObjectStatus,
    pub payment_id: String,
    pub amount_minor: i64,
    pub currency: String,
    pub reason: String,
    pub reference: String,
    pub created_at: DateTime<Utc>,
}

/// What a ledger needs to know about the objects it holds.
pub trait Record: Clone + Serialize {
    fn id(&self) -> &str;
    fn reference(&self) -> &str;
    fn created_at(&self) -> DateTime<Utc>;
}

/// [`Record`] for a type whose `id` and `created_at` fields are the record's, and whose
/// reference is the named field.
macro_rules! record_by_fields {
    ($kind:ty, $reference:ident) => {
        impl $crate::ledger::Record for $kind {
            fn id(&self) -> &str {
                &self.id
            }
            fn reference(&self) -> &str {
                &self.$reference
            }
            fn created_at(&self) -> chrono::DateTime<chrono::Utc> {
                self.created_at
            }
        }
    };
}
pub(crate) use record_by_fields;

record_by_fields!(Payment, reference);
record_by_fields!(Refund, reference);

/// All objects of one kind in creation order, indexed by id and by reference.
#[derive(Debug)]
pub struct Ledger<T> {
    objects: Vec<T>,
    by_id: HashMap<String, usize>,
    by_reference: HashMap<String, Vec<usize>>,
}

impl<T> Default for Ledger<T> {
    fn default() -> Self {
        Self {
            objects: Vec::new(),
            by_id: HashMap::new(),
            by_reference: HashMap::new(),
        }
    }
}

impl<T: Record> Ledger<T> {
    pub fn insert(&mut self, object: T) {
        let index = self.objects.len();
        self.by_id.insert(object.id().to_owned(), index);
        self.by_reference
            .entry(object.reference().to_owned())
            .or_default()
            .push(index);
        self.objects.push(object);
    }

    pub fn get(&self, id: &str) -> Option<&T> {
        self.by_id.get(id).map(|&index| &self.objects[index])
    }

    /// For status changes only (settling a pending object); ids and references stay.
    pub fn get_mut(&mut self, id: &str) -> Option<&mut T> {
        let index = *self.by_id.get(id)?;
        Some(&mut self.objects[index])
    }

    /// Every object with this reference, in creation order, whatever its age.
    pub fn with_reference<'a>(&'a self, reference: &str) -> impl Iterator<Item = &'a T> + 'a {
        let indexes = self
            .by_reference
            .get(reference)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        indexes.iter().map(|&index| &self.objects[index])
    }

    pub fn count_with_reference(&self, reference: &str) -> usize {
        self.by_reference.get(reference).map_or(0, Vec::len)
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payment(id: &str, reference: &str) -> Payment {
        Payment {
            id: id.into(),
            status: ObjectStatus::Succeeded,
            amount_minor: 100,
            currency: "KZT".into(),
            beneficiary_id: "vendor_1".into(),
            invoice_id: "inv_1".into(),
            reference: reference.into(),
            beneficiary_name: "Account holder of vendor_1".into(),
            description: "Payment of invoice inv_1".into(),
            created_at: Utc::now(),
        }
    }

    #[test]
    fn finds_by_id_and_by_reference_in_creation_order() {
        let mut ledger = Ledger::default();
        ledger.insert(payment("pay_1", "op_a"));
        ledger.insert(payment("pay_2", "op_b"));
        ledger.insert(payment("pay_3", "op_a"));

        assert_eq!(
            ledger.get("pay_2").map(|p| p.reference.as_str()),
            Some("op_b")
        );
        assert!(ledger.get("pay_9").is_none());
        let ids: Vec<_> = ledger
            .with_reference("op_a")
            .map(|p| p.id.as_str())
            .collect();
        assert_eq!(ids, ["pay_1", "pay_3"]);
        assert_eq!(ledger.count_with_reference("op_a"), 2);
        assert_eq!(ledger.count_with_reference("op_z"), 0);
        assert_eq!(ledger.len(), 3);
    }

    #[test]
    fn statuses_serialise_in_lower_case() {
        let json = serde_json::to_value(payment("pay_1", "op_a")).unwrap();
        assert_eq!(json["status"], "succeeded");
    }
}
