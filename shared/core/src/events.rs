//! Outcome events as agents and people receive them: the event types, the CloudEvents 1.0
//! envelope (structured JSON mode) and the routing key on the `fleet.events` exchange.
//! Which history rows become which type is decided where the rows are written (the
//! outbox trigger of the database); this module names those types and shapes what is
//! published. Pure: the outbox row comes in, bytes and a routing key go out.

mod data;

pub use data::{EventApproval, EventData, OperationEventData};

use crate::trace_context::TraceParent;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The CloudEvents version every event declares.
pub const SPEC_VERSION: &str = "1.0";
/// The AMQP content type of a structured-mode CloudEvent.
pub const CONTENT_TYPE: &str = "application/cloudevents+json";
/// The content type of `data` (the operation view).
pub const DATA_CONTENT_TYPE: &str = "application/json";
/// Every operation event type is this prefix plus [`EventType::as_str`].
pub const TYPE_PREFIX: &str = "fleet.operation.";
/// Every mandate event type is this prefix plus its kind (`fleet.mandate.used`).
pub const MANDATE_TYPE_PREFIX: &str = "fleet.mandate.";
/// An encoded tenant longer than this is replaced by its digest, so that the routing key
/// (type, a dot, tenant) always fits AMQP's 255-byte limit.
pub const MAX_TENANT_SEGMENT: usize = 200;

/// What happened to an operation. The wire name is `fleet.operation.<as_str>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Stored; a person's approval is requested.
    Prepared,
    /// One approval was recorded and the quorum is still short (`data.approval` says
    /// whose; `approvals_received` of `approvals_required`).
    ApprovalRecorded,
    /// The approval that completed the quorum.
    Approved,
    /// An approval stopped counting: its approver was removed, given another role or lost
    /// the tenant (`reason` in the history). `approval_status` says whether the operation
    /// is pending again; `approvals_received` is the count without it.
    ApprovalVoided,
    /// A person rejected it; the operation is cancelled.
    Rejected,
    /// Nobody approved it in time (once when a late approval is refused, once when the
    /// operation is cancelled for it).
    ApprovalExpired,
    /// A corrected intent replaced it before it ran; the operation is cancelled.
    Superseded,
    /// A worker claimed it and is about to call the provider.
    Executing,
    /// The provider accepted it asynchronously; the final answer follows.
    Accepted,
    Succeeded,
    Failed,
    /// Cancelled before any provider call for another reason (hash or policy mismatch),
    /// or after a conditional update met another version.
    Cancelled,
    /// The effect may or may not exist; reconciliation is working on it.
    Unknown,
    /// Proven not to have happened; it waits for another attempt with the same key.
    Requeued,
    /// A person must decide (ambiguous lookup, a contradicting webhook, …).
    Escalated,
    /// An operator settled it (succeeded, failed or cancelled) with evidence.
    Resolved,
    /// An operator took it out of the workers' hands for investigation.
    Disputed,
    /// A standing mandate was stored (`data` is the mandate's view, not an operation's).
    MandateCreated,
    /// A standing mandate approved an operation (`data.event.evidence.operation_id`).
    MandateUsed,
    /// A standing mandate's budget or count is used up (`data.event.evidence.by`).
    MandateExhausted,
    /// A standing mandate was revoked.
    MandateRevoked,
}

impl EventType {
    pub const ALL: [EventType; 17] = [
        EventType::Prepared,
        EventType::ApprovalRecorded,
        EventType::Approved,
        EventType::ApprovalVoided,
        EventType::Rejected,
        EventType::ApprovalExpired,
        EventType::Superseded,
        EventType::Executing,
        EventType::Accepted,
        EventType::Succeeded,
        EventType::Failed,
        EventType::Cancelled,
        EventType::Unknown,
        EventType::Requeued,
        EventType::Escalated,
        EventType::Resolved,
        EventType::Disputed,
    ];

    /// What happens to a standing mandate: published on the mandate's own queue of
    /// events, in its order, with the mandate's view as `data`.
    pub const MANDATE: [EventType; 4] = [
        EventType::MandateCreated,
        EventType::MandateUsed,
        EventType::MandateExhausted,
        EventType::MandateRevoked,
    ];

    /// The short name, as stored in the outbox and used as a metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Prepared => "prepared",
            EventType::ApprovalRecorded => "approval_recorded",
            EventType::Approved => "approved",
            EventType::ApprovalVoided => "approval_voided",
            EventType::Rejected => "rejected",
            EventType::ApprovalExpired => "approval_expired",
            EventType::Superseded => "superseded",
            EventType::Executing => "executing",
            EventType::Accepted => "accepted",
            EventType::Succeeded => "succeeded",
            EventType::Failed => "failed",
            EventType::Cancelled => "cancelled",
            EventType::Unknown => "unknown",
            EventType::Requeued => "requeued",
            EventType::Escalated => "escalated",
            EventType::Resolved => "resolved",
            EventType::Disputed => "disputed",
            EventType::MandateCreated => "mandate_created",
            EventType::MandateUsed => "mandate_used",
            EventType::MandateExhausted => "mandate_exhausted",
            EventType::MandateRevoked => "mandate_revoked",
        }
    }

    pub fn parse(s: &str) -> Option<EventType> {
        EventType::ALL
            .into_iter()
            .chain(EventType::MANDATE)
            .find(|t| t.as_str() == s)
    }

    /// The kind of a mandate's event (`used`), `None` for an operation's.
    pub fn mandate_kind(self) -> Option<&'static str> {
        self.as_str().strip_prefix("mandate_")
    }

    /// The CloudEvents `type`, e.g. `fleet.operation.succeeded`, `fleet.mandate.used`.
    pub fn cloudevents_type(self) -> String {
        self.cloudevents_type_str().to_owned()
    }

    /// [`cloudevents_type`](Self::cloudevents_type) without an allocation: the prefix
    /// ([`TYPE_PREFIX`] or [`MANDATE_TYPE_PREFIX`]) and the name, spelt out once here.
    pub fn cloudevents_type_str(self) -> &'static str {
        match self {
            EventType::Prepared => "fleet.operation.prepared",
            EventType::ApprovalRecorded => "fleet.operation.approval_recorded",
            EventType::Approved => "fleet.operation.approved",
            EventType::ApprovalVoided => "fleet.operation.approval_voided",
            EventType::Rejected => "fleet.operation.rejected",
            EventType::ApprovalExpired => "fleet.operation.approval_expired",
            EventType::Superseded => "fleet.operation.superseded",
            EventType::Executing => "fleet.operation.executing",
            EventType::Accepted => "fleet.operation.accepted",
            EventType::Succeeded => "fleet.operation.succeeded",
            EventType::Failed => "fleet.operation.failed",
            EventType::Cancelled => "fleet.operation.cancelled",
            EventType::Unknown => "fleet.operation.unknown",
            EventType::Requeued => "fleet.operation.requeued",
            EventType::Escalated => "fleet.operation.escalated",
            EventType::Resolved => "fleet.operation.resolved",
            EventType::Disputed => "fleet.operation.disputed",
            EventType::MandateCreated => "fleet.mandate.created",
            EventType::MandateUsed => "fleet.mandate.used",
            EventType::MandateExhausted => "fleet.mandate.exhausted",
            EventType::MandateRevoked => "fleet.mandate.revoked",
        }
    }
}

/// One outbox row, as published.
#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeEvent {
    pub operation_id: String,
    /// The operation's key (`operations.idempotency_key`: `<tenant hash>.<id>`, or the bare
    /// id of an operation stored before keys named the tenant), which names the operation
    /// across tenants where its id alone does not.
    pub key: String,
    /// 1, 2, 3, … per operation, in the order the events happened.
    pub sequence: i32,
    pub event_type: EventType,
    pub tenant_id: String,
    /// RFC 3339, UTC: when the change committed (the database clock).
    pub time: String,
    /// The operation view after the change, with `sequence` (a mandate's view for a
    /// mandate's event), read into its type.
    pub data: EventData,
}

impl OutcomeEvent {
    /// Unique per event and identical on every republish: consumers deduplicate on it.
    /// Built from the operation's key, so two tenants' operations with one id never share
    /// an event id (and an operation stored before keys named the tenant keeps its ids).
    pub fn id(&self) -> String {
        format!("{}.{}", self.key, self.sequence)
    }

    /// The CloudEvents `subject`: `<tenant id>/<operation id>`, e.g.
    /// `org_482/op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8`. An operation id is unique per tenant only,
    /// so the subject names both; an operation id never holds a `/`, so the operation id is
    /// what follows the last `/` and the tenant id (which may hold one) everything before.
    pub fn subject(&self) -> String {
        format!("{}/{}", self.tenant_id, self.operation_id)
    }

    /// `<type>.<tenant segment>`, e.g. `fleet.operation.succeeded.acme`.
    pub fn routing_key(&self) -> String {
        format!(
            "{}.{}",
            self.event_type.cloudevents_type_str(),
            tenant_segment(&self.tenant_id)
        )
    }

    /// The structured-mode CloudEvent.
    pub fn cloud_event(&self, source: &str) -> Value {
        json!({
            "specversion": SPEC_VERSION,
            "id": self.id(),
            "source": source,
            "type": self.event_type.cloudevents_type(),
            "subject": self.subject(),
            "time": self.time,
            "datacontenttype": DATA_CONTENT_TYPE,
            "data": self.data.to_json(),
        })
    }

    pub fn to_bytes(&self, source: &str) -> Vec<u8> {
        self.to_bytes_traced(source, None)
    }

    /// The structured-mode CloudEvent with the distributed-tracing extension's
    /// `traceparent` attribute (the trace of the operation it reports), when there is one.
    ///
    /// The bytes are those of [`cloud_event`](Self::cloud_event) (with `traceparent`
    /// added) written by `serde_json`, which writes an object's members in the order of
    /// their names; the envelope is written here member by member in that order, without
    /// building it as a JSON value first.
    pub fn to_bytes_traced(&self, source: &str, traceparent: Option<&TraceParent>) -> Vec<u8> {
        fn member(out: &mut Vec<u8>, name: &str, value: &str) {
            out.push(b',');
            write_json_str(out, name);
            out.push(b':');
            write_json_str(out, value);
        }
        let mut out = Vec::with_capacity(2048);
        out.extend_from_slice(b"{\"data\":");
        self.data.write_json(&mut out);
        member(&mut out, "datacontenttype", DATA_CONTENT_TYPE);
        member(&mut out, "id", &self.id());
        member(&mut out, "source", source);
        member(&mut out, "specversion", SPEC_VERSION);
        member(&mut out, "subject", &self.subject());
        member(&mut out, "time", &self.time);
        if let Some(tp) = traceparent {
            member(&mut out, TRACEPARENT_ATTRIBUTE, &tp.to_string());
        }
        member(&mut out, "type", self.event_type.cloudevents_type_str());
        out.push(b'}');
        out
    }
}

/// `s` as a JSON string, escaped as `serde_json` escapes it.
fn write_json_str(out: &mut Vec<u8>, s: &str) {
    serde_json::to_writer(out, s).expect("a string always serialises");
}

/// The CloudEvents distributed-tracing extension attribute.
pub const TRACEPARENT_ATTRIBUTE: &str = "traceparent";

/// The CloudEvents `source` of a deployment: `/fleet`, or `/fleet/<namespace>` when the
/// broker names are namespaced.
pub fn source(namespace: &str) -> String {
    match namespace {
        "" => "/fleet".to_owned(),
        ns => format!("/fleet/{}", percent_encode(ns)),
    }
}

/// A tenant id as one routing-key word. Tenant ids may hold any printable character,
/// dots and the binding wildcards `*` and `#` included, so every byte outside
/// `[A-Za-z0-9_-]` is written `%XX` (upper-case hex of the UTF-8 byte): `acme.kz` →
/// `acme%2Ekz`. An encoding longer than [`MAX_TENANT_SEGMENT`] becomes `~` plus the first
/// 32 hex digits of the id's SHA-256; no plain encoding contains `~`.
pub fn tenant_segment(tenant_id: &str) -> String {
    let encoded = percent_encode(tenant_id);
    if encoded.len() <= MAX_TENANT_SEGMENT {
        return encoded;
    }
    let digest = hex::encode(Sha256::digest(tenant_id.as_bytes()));
    format!("~{}", &digest[..32])
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests;
