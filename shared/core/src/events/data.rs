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

use serde::de::Error as _;
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

fn not_a_view(member: &str, problem: &str) -> NotAView {
    NotAView {
        member: member.to_owned(),
        problem: problem.to_owned(),
    }
}
