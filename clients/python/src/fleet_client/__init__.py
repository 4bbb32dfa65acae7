"""A typed Python client for fleet.

- `Intent`, `OperationView`, `Event`, `Status`, `ApprovalStatus`: intent.v1 and what fleet
  answers with (docs/protocol.md, docs/api.md, docs/events.md);
- `payload_hash(intent)`: the hash a person approves;
- `FleetClient`: submit, read and wait over the HTTP API with a bearer token;
- `QueueSubmitter`: submit over the queue as the agent's own broker user;
- `EventListener`: the outcome events of the agent's tenants (asyncio);
- `FleetError` and its kinds: refusals with fleet's code and field;
- `fleet_client.evidence`: an evidence bundle checked offline (`python -m fleet_client.evidence`,
  with the `verify` extra).
"""

from .errors import ApiError, FleetError, HashMismatch, PublishError
from .events import BrokerError, EventListener, ListenerClosed, SequenceFilter, binding_keys, routing_word
from .hashing import SNAPSHOT_MEMBERS, canonical_snapshot, payload_hash, snapshot
from .http import FleetClient, Submitted
from .mandates import Coverage, MandateStanding
from .models import (
    FINAL_STATUSES,
    Action,
    ApprovalStatus,
    ContractPayload,
    DealCreatePayload,
    DealUpdatePayload,
    Event,
    Intent,
    OperationView,
    OrderStatusPayload,
    PaymentPayload,
    RefundPayload,
    Status,
    Until,
    new_operation_id,
)
from .queue import QueueSubmitter, namespaced

__all__ = [
    "FINAL_STATUSES",
    "SNAPSHOT_MEMBERS",
    "Action",
    "ApiError",
    "ApprovalStatus",
    "BrokerError",
    "ContractPayload",
    "Coverage",
    "DealCreatePayload",
    "DealUpdatePayload",
    "Event",
    "EventListener",
    "FleetClient",
    "FleetError",
    "HashMismatch",
    "Intent",
    "ListenerClosed",
    "MandateStanding",
    "OperationView",
    "OrderStatusPayload",
    "PaymentPayload",
    "PublishError",
    "QueueSubmitter",
    "RefundPayload",
    "SequenceFilter",
    "Status",
    "Submitted",
    "Until",
    "binding_keys",
    "canonical_snapshot",
    "namespaced",
    "new_operation_id",
    "payload_hash",
    "routing_word",
    "snapshot",
]
