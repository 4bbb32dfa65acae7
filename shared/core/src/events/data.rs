//! What an outcome event carries as `data`, as a type. An operation's event carries its
//! [`OperationView`] as it was right after the change (the database's `operation_view()`,
//! the view the API serves), with the event's `sequence` beside the view's members and,
//! for an approval, whose it was (`approval`). A mandate's event carries the mandate's
//! view, which is not an operation's and stays JSON here.
//!
//! The outbox trigger writes `data` in SQL; the store reads every row it relays through
//! [`EventData::read`], which refuses a member it does not know, so a change of the SQL
//! that the type does not follow stops the relay loudly instead of reaching agents. Written
//! back ([`EventData::to_json`]) it is the same JSON, so a republished event is the first
//! copy byte for byte.

use std::fmt;

use serde::de::{DeserializeSeed, Error as _, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::EventType;
use crate::view::{NotAView, OperationView};

/// The `data` of an operation's event.
#[derive(Debug, Clone, PartialEq)]
pub struct OperationEventData {
    /// The operation right after the change.
    pub view: OperationView,
    /// 1, 2, 3, … per operation, in the order the changes happened (`data.sequence`).
    pub sequence: i64,
    /// Whose approval an `approval_recorded` or `approved` event reports; absent
    /// otherwise (and for an approval no person gave, such as a standing mandate's).
    pub approval: Option<EventApproval>,
}

/// `data.approval`: who approved, whether they signed the snapshot, how they signed in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventApproval {
    pub by: String,
    pub signed: bool,
    /// `token` or `oidc`; null for a history row written before it was recorded.
    pub signed_in_with: Option<String>,
}

/// The members an operation's event adds to the view.
const SEQUENCE: &str = "sequence";
const APPROVAL: &str = "approval";

impl OperationEventData {
    /// Reads an operation event's `data`: the view's members (each known to
    /// [`OperationView`], unknown ones refused), `sequence`, and `approval` when present.
    pub fn from_json(value: Value) -> Result<OperationEventData, NotAView> {
        let Value::Object(mut members) = value else {
            return Err(not_a_view("", "an event's data is an object"));
        };
        let sequence = members
            .remove(SEQUENCE)
            .ok_or_else(|| not_a_view(SEQUENCE, "missing"))?;
        let sequence = sequence
            .as_i64()
            .filter(|n| *n >= 1)
            .ok_or_else(|| not_a_view(SEQUENCE, "a whole number from 1"))?;
        let approval = match members.remove(APPROVAL) {
            None => None,
            Some(a) => Some(serde_path_to_error::deserialize(a).map_err(|e| {
                not_a_view(&format!("{APPROVAL}.{}", e.path()), &e.inner().to_string())
            })?),
        };
        let view = OperationView::from_json(Value::Object(members))?;
        Ok(OperationEventData {
            view,
            sequence,
            approval,
        })
    }

    /// [`from_json`](Self::from_json) of the JSON text `bytes`, read straight into the
    /// type instead of into a JSON value first: the view's members go to the view's own
    /// reading (unknown ones refused there, named as `from_json` names them), and
    /// `sequence` and `approval` are set aside as they pass and judged as `from_json`
    /// judges them.
    pub fn from_slice(bytes: &[u8]) -> Result<OperationEventData, NotAView> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let mut aside = Aside::default();
        let view: OperationView = serde_path_to_error::deserialize(Members {
            de: &mut de,
            aside: &mut aside,
        })
        .map_err(|e| {
            let member = e.path().to_string();
            // The document itself (not an object, or not JSON) is named by "".
            let member = match member.as_str() {
                "." | "?" => String::new(),
                _ => member,
            };
            not_a_view(&member, &e.inner().to_string())
        })?;
        de.end()
            .map_err(|e| not_a_view("", &format!("not one JSON document: {e}")))?;
        let sequence = aside
            .sequence
            .ok_or_else(|| not_a_view(SEQUENCE, "missing"))?
            .as_i64()
            .filter(|n| *n >= 1)
            .ok_or_else(|| not_a_view(SEQUENCE, "a whole number from 1"))?;
        let approval = match aside.approval {
            None => None,
            Some(a) => Some(serde_path_to_error::deserialize(a).map_err(|e| {
                not_a_view(&format!("{APPROVAL}.{}", e.path()), &e.inner().to_string())
            })?),
        };
        Ok(OperationEventData {
            view,
            sequence,
            approval,
        })
    }

    /// The JSON the outbox holds: the view's members, `sequence`, and `approval`.
    pub fn to_json(&self) -> Value {
        let mut value = self.view.to_json();
        let members = value.as_object_mut().expect("a view is an object");
        members.insert(SEQUENCE.to_owned(), self.sequence.into());
        if let Some(a) = &self.approval {
            let a = serde_json::to_value(a).expect("an approval serialises");
            members.insert(APPROVAL.to_owned(), a);
        }
        value
    }
}

impl Serialize for OperationEventData {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

impl<'de> Deserialize<'de> for OperationEventData {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        OperationEventData::from_json(Value::deserialize(d)?).map_err(D::Error::custom)
    }
}

/// An outbox row's `data`, read by its event type.
#[derive(Debug, Clone, PartialEq)]
pub enum EventData {
    /// An operation's event ([`EventType::ALL`]).
    Operation(Box<OperationEventData>),
    /// A mandate's event ([`EventType::MANDATE`]): the mandate's view, `sequence` and
    /// `event`.
    Mandate(Value),
}

impl EventData {
    /// Reads the `data` of an event of `event_type`: an operation's is refused unless it is
    /// exactly an [`OperationEventData`].
    pub fn read(event_type: EventType, data: Value) -> Result<EventData, NotAView> {
        match event_type.mandate_kind() {
            Some(_) => Ok(EventData::Mandate(data)),
            None => Ok(EventData::Operation(Box::new(
                OperationEventData::from_json(data)?,
            ))),
        }
    }

    /// [`read`](Self::read) of the JSON text `bytes` (an operation's read straight into
    /// its type, [`OperationEventData::from_slice`]).
    pub fn read_slice(event_type: EventType, bytes: &[u8]) -> Result<EventData, NotAView> {
        match event_type.mandate_kind() {
            Some(_) => serde_json::from_slice(bytes)
                .map(EventData::Mandate)
                .map_err(|e| not_a_view("", &e.to_string())),
            None => Ok(EventData::Operation(Box::new(
                OperationEventData::from_slice(bytes)?,
            ))),
        }
    }

    /// The operation's data, `None` for a mandate's event.
    pub fn operation(&self) -> Option<&OperationEventData> {
        match self {
            EventData::Operation(d) => Some(d),
            EventData::Mandate(_) => None,
        }
    }

    /// The operation's data, `None` for a mandate's event.
    pub fn into_operation(self) -> Option<Box<OperationEventData>> {
        match self {
            EventData::Operation(d) => Some(d),
            EventData::Mandate(_) => None,
        }
    }

    /// The JSON published as the CloudEvent's `data`.
    pub fn to_json(&self) -> Value {
        match self {
            EventData::Operation(d) => d.to_json(),
            EventData::Mandate(v) => v.clone(),
        }
    }

    /// [`to_json`](Self::to_json) written to `out` as `serde_json` writes it.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        let written = match self {
            EventData::Operation(d) => serde_json::to_writer(out, &d.to_json()),
            EventData::Mandate(v) => serde_json::to_writer(out, v),
        };
        written.expect("a JSON value always serialises");
    }
}

/// `sequence` and `approval` of an event's data, set aside while the view is read.
#[derive(Default)]
struct Aside {
    sequence: Option<Value>,
    approval: Option<Value>,
}

/// The event's data as the view's reading sees it: an object whose `sequence` and
/// `approval` members are taken out into [`Aside`] as they pass.
struct Members<'a, D> {
    de: D,
    aside: &'a mut Aside,
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Members<'_, D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.de.deserialize_map(MembersVisitor {
            inner: visitor,
            aside: self.aside,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map struct
        enum identifier ignored_any
    }
}

struct MembersVisitor<'a, V> {
    inner: V,
    aside: &'a mut Aside,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for MembersVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(MembersMap {
            map,
            aside: self.aside,
        })
    }
}

struct MembersMap<'a, A> {
    map: A,
    aside: &'a mut Aside,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for MembersMap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.map.next_key::<String>()? else {
                return Ok(None);
            };
            match key.as_str() {
                SEQUENCE => self.aside.sequence = Some(self.map.next_value()?),
                APPROVAL => self.aside.approval = Some(self.map.next_value()?),
                _ => return seed.deserialize(key.into_deserializer()).map(Some),
            }
        }
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

fn not_a_view(member: &str, problem: &str) -> NotAView {
    NotAView {
        member: member.to_owned(),
        problem: problem.to_owned(),
    }
}
