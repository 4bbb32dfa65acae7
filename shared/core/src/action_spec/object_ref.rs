//! How an action's intent names a provider's object (a refund's payment, the deal an
//! update changes), as its catalogue entry lists them. Whose such an object is, is judged
//! in `crate::objects`.

use serde_json::Value;

use super::action::Action;

/// Where an intent names an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectField {
    /// The intent's `target`.
    Target,
    /// A string member of the payload.
    Payload(&'static str),
}

/// One reference to a provider's object in an action's intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectRef {
    /// What the object is, for people ("payment", "deal").
    pub kind: &'static str,
    pub field: ObjectField,
    /// The actions whose succeeded operations record such an object as their
    /// `external_id` (at the action's own provider): where the fleet's records of it are
    /// (their wire names: `recorded_by_names`, read from the catalogue).
    pub recorded_by: &'static [Action],
}

impl ObjectRef {
    /// The object's id as the intent names it; `None` when it names none.
    pub fn id<'a>(&self, target: Option<&'a str>, payload: &'a Value) -> Option<&'a str> {
        match self.field {
            ObjectField::Target => target,
            ObjectField::Payload(member) => payload.get(member)?.as_str(),
        }
    }

    /// The field a refusal names: `target`, `payload.payment_id`.
    pub fn field_name(&self) -> String {
        match self.field {
            ObjectField::Target => "target".to_owned(),
            ObjectField::Payload(member) => format!("payload.{member}"),
        }
    }
}
