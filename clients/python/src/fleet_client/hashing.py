"""The payload hash a person approves (docs/protocol.md, "The snapshot and its hash")."""

from __future__ import annotations

import hashlib
from typing import Any, Mapping, Union

import rfc8785

from .models import Intent

# The eight members a person approves; the rest of an intent explains or links.
SNAPSHOT_MEMBERS = (
    "operation_id",
    "tenant_id",
    "action",
    "provider",
    "target",
    "payload",
    "policy_version",
    "data_version",
)


def snapshot(intent: Union[Intent, Mapping[str, Any]]) -> dict[str, Any]:
    """The snapshot: exactly the eight members, `target` as null when the intent has none."""
    data = intent.to_dict() if isinstance(intent, Intent) else intent
    return {k: data.get(k) for k in SNAPSHOT_MEMBERS}


def canonical_snapshot(intent: Union[Intent, Mapping[str, Any]]) -> bytes:
    """The snapshot in RFC 8785 canonical JSON: the bytes that are hashed."""
    return rfc8785.dumps(snapshot(intent))


def payload_hash(intent: Union[Intent, Mapping[str, Any]]) -> str:
    """`sha256:` + the hex SHA-256 of the canonical snapshot, as fleet stores and shows it."""
    return "sha256:" + hashlib.sha256(canonical_snapshot(intent)).hexdigest()
