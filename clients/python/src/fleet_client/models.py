"""intent.v1, the operation view and the outcome event, as typed values.

The field lists follow docs/protocol.md (intent.v1), docs/api.md (the view) and
docs/events.md (the CloudEvent). The view is read leniently: a member fleet adds later is
kept in `raw` rather than refused, so an older client keeps working against a newer fleet.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal, Mapping, TypedDict, Union

JSON = Union[None, bool, int, float, str, list["JSON"], dict[str, "JSON"]]

SCHEMA = "intent.v1"

Action = Literal[
    "payment.create",
    "refund.create",
    "crm.deal.create",
    "crm.deal.update",
    "order.status.change",
    "contract.send",
]

# What `wait` and the listener wait for: the approval decided, or the operation final.
Until = Literal["decision", "final"]


class Status(str, Enum):
    """An operation's `status` (the eight of docs/api.md)."""

    NOT_STARTED = "not_started"
    IN_PROGRESS = "in_progress"
    ACCEPTED = "accepted"
    UNKNOWN = "unknown"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    DISPUTED = "disputed"

    @property
    def is_final(self) -> bool:
        return self in FINAL_STATUSES


FINAL_STATUSES = frozenset({Status.SUCCEEDED, Status.FAILED, Status.CANCELLED, Status.DISPUTED})


class ApprovalStatus(str, Enum):
    """An operation's `approval_status`."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"


# The payloads of docs/protocol.md, one per action. TypedDicts cost nothing at run time:
# a payload is sent as the plain object it is.
class _PaymentPayloadRequired(TypedDict):
    invoice_id: str
    beneficiary_id: str
    amount_minor: int
    currency: str


class PaymentPayload(_PaymentPayloadRequired, total=False):
    # The payee's name as the invoice gives it: the provider's directory checks it against
    # the account's holder, and the approver sees the result (docs/protocol.md).
    beneficiary_name: str


class RefundPayload(TypedDict):
    payment_id: str
    amount_minor: int
    currency: str
    reason: str


class DealCreatePayload(TypedDict):
    name: str
    amount_minor: int
    currency: str
    stage: str
    owner_id: str


class DealUpdatePayload(TypedDict):
    expected_version: int
    patch: dict[str, JSON]


OrderStatusPayload = TypedDict("OrderStatusPayload", {"from": str, "to": str, "reason": str})


class ContractPayload(TypedDict):
    template_id: str
    recipient_id: str
    document_sha256: str
    subject: str


Payload = Union[
    PaymentPayload,
    RefundPayload,
    DealCreatePayload,
    DealUpdatePayload,
    OrderStatusPayload,
    ContractPayload,
    Mapping[str, JSON],
]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_operation_id() -> str:
    """`op_` + a ULID: 48 bits of milliseconds, then 80 random bits, in Crockford base32.

    Make it once, before the first send, and reuse it for every resend: that is what makes
    a resend the same operation.
    """
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(secrets.token_bytes(10), "big")
    return "op_" + "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


@dataclass(frozen=True)
class Intent:
    """An intent.v1 message. Validation is fleet's (the API answers 422 naming the field)."""

    operation_id: str
    tenant_id: str
    action: Action
    provider: str
    payload: Payload
    policy_version: str
    data_version: str
    approval_ttl_seconds: int
    target: str | None = None
    rationale: str | None = None
    supersedes: str | None = None
    schema: str = SCHEMA

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "operation_id": self.operation_id,
            "tenant_id": self.tenant_id,
            "action": self.action,
            "provider": self.provider,
            "target": self.target,
            "payload": dict(self.payload),
            "policy_version": self.policy_version,
            "data_version": self.data_version,
            "approval_ttl_seconds": self.approval_ttl_seconds,
            "rationale": self.rationale,
            "supersedes": self.supersedes,
        }

    def to_json(self) -> bytes:
        """The message body, the same bytes for every resend of this intent."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":")).encode()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Intent:
        return cls(
            schema=data.get("schema", SCHEMA),
            operation_id=data["operation_id"],
            tenant_id=data["tenant_id"],
            action=data["action"],
            provider=data["provider"],
            target=data.get("target"),
            payload=data["payload"],
            policy_version=data["policy_version"],
            data_version=data["data_version"],
            approval_ttl_seconds=data["approval_ttl_seconds"],
            rationale=data.get("rationale"),
            supersedes=data.get("supersedes"),
        )


@dataclass(frozen=True)
class OperationView:
    """An operation as `GET /v1/operations/{id}` and the events' `data` show it."""

    operation_id: str
    tenant_id: str
    action: str
    provider: str
    target: str | None
    payload: dict[str, Any]
    payload_hash: str
    policy_version: str
    data_version: str
    status: Status
    approval_status: ApprovalStatus
    escalated: bool
    reason: str | None = None
    error_code: str | None = None
    external_id: str | None = None
    supersedes: str | None = None
    payee: dict[str, Any] | None = None
    risk: list[dict[str, Any]] | None = None
    approval_expires_at: str | None = None
    approvals_required: int | None = None
    approvals_received: int | None = None
    decided_by: str | None = None
    decided_at: str | None = None
    submitted_by: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    unknown_since: str | None = None
    escalated_at: str | None = None
    resolved_at: str | None = None
    # The object as fleet sent it, members this client does not know included.
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OperationView:
        return cls(
            operation_id=data["operation_id"],
            tenant_id=data["tenant_id"],
            action=data["action"],
            provider=data["provider"],
            target=data.get("target"),
            payload=data.get("payload") or {},
            payload_hash=data["payload_hash"],
            policy_version=data["policy_version"],
            data_version=data["data_version"],
            status=Status(data["status"]),
            approval_status=ApprovalStatus(data["approval_status"]),
            escalated=bool(data.get("escalated", False)),
            reason=data.get("reason"),
            error_code=data.get("error_code"),
            external_id=data.get("external_id"),
            supersedes=data.get("supersedes"),
            payee=data.get("payee"),
            risk=data.get("risk"),
            approval_expires_at=data.get("approval_expires_at"),
            approvals_required=data.get("approvals_required"),
            approvals_received=data.get("approvals_received"),
            decided_by=data.get("decided_by"),
            decided_at=data.get("decided_at"),
            submitted_by=data.get("submitted_by"),
            created_at=data.get("created_at"),
            updated_at=data.get("updated_at"),
            unknown_since=data.get("unknown_since"),
            escalated_at=data.get("escalated_at"),
            resolved_at=data.get("resolved_at"),
            raw=dict(data),
        )

    @property
    def is_final(self) -> bool:
        """succeeded, failed, cancelled or disputed: nothing more will happen by itself."""
        return self.status.is_final

    @property
    def is_decided(self) -> bool:
        """What ends `wait_for=decision`: the approval decided, the operation final without
        one (superseded while pending), or a person asked to look (escalated)."""
        return self.approval_status is not ApprovalStatus.PENDING or self.is_final or self.escalated

    def satisfies(self, until: Until) -> bool:
        """Whether a wait for `until` would end on this view (escalation ends both)."""
        if until == "decision":
            return self.is_decided
        if until == "final":
            return self.is_final or self.escalated
        raise ValueError(f"until must be 'decision' or 'final', not {until!r}")


@dataclass(frozen=True)
class Event:
    """One outcome event from `fleet.events` (a CloudEvent in structured JSON mode)."""

    id: str
    type: str
    source: str
    subject: str
    time: str
    sequence: int
    data: OperationView

    @property
    def name(self) -> str:
        """The event's name without its prefix: `succeeded` for `fleet.operation.succeeded`."""
        return self.type.removeprefix("fleet.operation.")

    @property
    def tenant_id(self) -> str:
        """The tenant of the operation: the `subject` (`<tenant id>/<operation id>`) up to
        its last `/` (a tenant id may hold one, an operation id never does)."""
        return self.subject.rpartition("/")[0]

    @property
    def operation_id(self) -> str:
        """The operation the event reports: the `subject` after its last `/`."""
        return self.subject.rpartition("/")[2]

    @classmethod
    def from_json(cls, body: bytes | str) -> Event:
        event = json.loads(body)
        data = event["data"]
        return cls(
            id=event["id"],
            type=event["type"],
            source=event["source"],
            subject=event["subject"],
            time=event["time"],
            sequence=int(data["sequence"]),
            data=OperationView.from_dict(data),
        )
