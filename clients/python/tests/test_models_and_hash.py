"""The pure parts: models, the hash recipe, routing words, deduplication, error bodies."""

from __future__ import annotations

import re

import pytest

from fleet_client import (
    ApiError,
    ApprovalStatus,
    Event,
    Intent,
    OperationView,
    SequenceFilter,
    Status,
    binding_keys,
    canonical_snapshot,
    new_operation_id,
    payload_hash,
    routing_word,
)

# The two worked examples of docs/protocol.md, with the hashes `fleetctl hash` prints for
# them (the Rust suite keeps those examples and hashes current).
PAYMENT = {
    "schema": "intent.v1",
    "operation_id": "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8",
    "tenant_id": "org_482",
    "action": "payment.create",
    "provider": "payments",
    "target": None,
    "payload": {"invoice_id": "inv_9182", "beneficiary_id": "vendor_77",
                "amount_minor": 1250000, "currency": "KZT"},
    "policy_version": "payments-v3",
    "data_version": "inv_9182@7",
    "approval_ttl_seconds": 3600,
    "rationale": "Invoice is due today and matches PO 5531.",
    "supersedes": None,
}
PAYMENT_HASH = "sha256:60cf0fbfa716084ae1ee9adba77ae642028084e26713be31c4bfb2ee7857c21c"

DEAL_UPDATE = {
    "schema": "intent.v1",
    "operation_id": "op_01JQ8R7D9M4KX2T3V4W5Y6Z7B0",
    "tenant_id": "org_482",
    "action": "crm.deal.update",
    "provider": "crm",
    "target": "deal_01J",
    "payload": {"expected_version": 7,
                "patch": {"stage": "negotiation", "probability": 0.35, "score": 1e21,
                          "owner_ids": ["u_7", "u_9"]}},
    "policy_version": "crm-v1",
    "data_version": "deal_01J@7",
    "approval_ttl_seconds": 86400,
    "rationale": "Customer asked for a call; move to negotiation.",
    "supersedes": None,
}
DEAL_UPDATE_HASH = "sha256:82f008c4ea17a18114bbf10e7e0842072de13e19449cde3f7a41ceb24dcc1894"


def test_payload_hash_matches_fleets_worked_examples() -> None:
    assert payload_hash(PAYMENT) == PAYMENT_HASH
    assert payload_hash(DEAL_UPDATE) == DEAL_UPDATE_HASH
    assert payload_hash(Intent.from_dict(PAYMENT)) == PAYMENT_HASH
    assert payload_hash(Intent.from_dict(DEAL_UPDATE)) == DEAL_UPDATE_HASH


def test_canonical_snapshot_is_the_documented_line() -> None:
    assert canonical_snapshot(DEAL_UPDATE) == (
        b'{"action":"crm.deal.update","data_version":"deal_01J@7",'
        b'"operation_id":"op_01JQ8R7D9M4KX2T3V4W5Y6Z7B0","payload":{"expected_version":7,'
        b'"patch":{"owner_ids":["u_7","u_9"],"probability":0.35,"score":1e+21,'
        b'"stage":"negotiation"}},"policy_version":"crm-v1","provider":"crm",'
        b'"target":"deal_01J","tenant_id":"org_482"}'
    )


def test_hash_ignores_members_outside_the_snapshot_and_reads_absent_target_as_null() -> None:
    other = dict(PAYMENT, rationale="another reason", approval_ttl_seconds=60,
                 supersedes="op_01JQ8R7D9M4KX2T3V4W5Y6Z7A9")
    del other["target"]
    assert payload_hash(other) == PAYMENT_HASH
    assert payload_hash(dict(PAYMENT, data_version="inv_9182@8")) != PAYMENT_HASH


def test_intent_round_trips_through_its_dict_and_json() -> None:
    intent = Intent.from_dict(PAYMENT)
    assert intent.to_dict() == PAYMENT
    assert Intent.from_dict(__import__("json").loads(intent.to_json())) == intent


def test_new_operation_ids_follow_the_contract_and_differ() -> None:
    pattern = re.compile(r"^op_[0-7][0-9A-HJKMNP-TV-Z]{25}$")
    ids = {new_operation_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(pattern.match(i) for i in ids)


def test_routing_word_encodes_tenants_as_events_md_says() -> None:
    assert routing_word("org_482") == "org_482"
    assert routing_word("acme.kz") == "acme%2Ekz"
    assert routing_word("a b") == "a%20b"
    assert routing_word("a*#") == "a%2A%23"
    assert routing_word("ж") == "%D0%B6"
    long = "t." * 101
    word = routing_word(long)
    assert word.startswith("~") and len(word) == 33 and "%" not in word
    assert binding_keys(["org_482", "acme.kz"]) == [
        "fleet.operation.*.org_482", "fleet.operation.*.acme%2Ekz"]


def test_sequence_filter_drops_redeliveries_and_older_events_per_operation() -> None:
    seen = SequenceFilter()
    assert seen.is_new("op_a", 1)
    seen.record("op_a", 1)
    seen.record("op_a", 2)
    assert not seen.is_new("op_a", 1)
    assert not seen.is_new("op_a", 2)
    assert seen.is_new("op_a", 3)
    assert seen.is_new("op_b", 1)  # per operation
    seen.record("op_a", 1)  # a late redelivery never lowers the mark
    assert seen.seen["op_a"] == 2


VIEW = {
    "operation_id": "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8", "tenant_id": "org_482",
    "action": "payment.create", "provider": "payments", "target": None, "supersedes": None,
    "payload": PAYMENT["payload"], "payload_hash": PAYMENT_HASH,
    "policy_version": "payments-v3", "data_version": "inv_9182@7", "payee": None, "risk": [],
    "status": "succeeded", "reason": None, "error_code": None, "external_id": "pay_1",
    "escalated": False, "approval_status": "approved",
    "approval_expires_at": "2026-11-29T23:00:00.000000Z", "approvals_required": 1,
    "approvals_received": 1, "decided_by": "alice", "decided_at": "2026-11-29T22:00:00.981240Z",
    "submitted_by": None, "created_at": "2026-11-29T21:59:58.120554Z",
    "updated_at": "2026-11-29T22:00:01.412093Z", "unknown_since": None, "escalated_at": None,
    "resolved_at": "2026-11-29T22:00:01.412093Z", "a_member_added_later": 7,
}


def test_view_reads_statuses_as_enums_and_keeps_unknown_members() -> None:
    view = OperationView.from_dict(VIEW)
    assert view.status is Status.SUCCEEDED and view.status == "succeeded"
    assert view.approval_status is ApprovalStatus.APPROVED
    assert view.is_final and view.is_decided
    assert view.raw["a_member_added_later"] == 7


@pytest.mark.parametrize(
    ("status", "approval", "escalated", "decision", "final"),
    [
        ("not_started", "pending", False, False, False),
        ("not_started", "approved", False, True, False),
        ("cancelled", "rejected", False, True, True),
        ("cancelled", "pending", False, True, True),  # superseded while pending
        ("unknown", "approved", True, True, True),  # escalated: a person looks
        ("unknown", "approved", False, True, False),
        ("disputed", "approved", False, True, True),
    ],
)
def test_view_satisfies_waits_as_the_api_does(
    status: str, approval: str, escalated: bool, decision: bool, final: bool
) -> None:
    view = OperationView.from_dict(dict(VIEW, status=status, approval_status=approval,
                                        escalated=escalated))
    assert view.satisfies("decision") is decision
    assert view.satisfies("final") is final
    with pytest.raises(ValueError):
        view.satisfies("approved")  # type: ignore[arg-type]


def test_event_reads_the_cloudevent_envelope() -> None:
    body = __import__("json").dumps({
        "specversion": "1.0", "id": "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8.4", "source": "/fleet",
        "type": "fleet.operation.succeeded", "subject": "org/482/op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8",
        "time": "2026-11-29T22:00:01.412093Z", "datacontenttype": "application/json",
        "data": dict(VIEW, sequence=4),
    })
    event = Event.from_json(body)
    assert event.sequence == 4 and event.name == "succeeded"
    # A tenant id may hold a "/", an operation id never does.
    assert (event.tenant_id, event.operation_id) == ("org/482", "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8")
    assert event.data.external_id == "pay_1"


def test_api_error_reads_a_problem_with_its_detail_and_request_id() -> None:
    error = ApiError.from_response(
        422,
        {"type": "/docs/api.md#error-invalid_field", "title": "Invalid field", "status": 422,
         "detail": "A member is missing, unknown, of the wrong type or out of its limits.",
         "code": "invalid_field", "field": "payload.amount_minor", "request_id": "req_1",
         "error": {"code": "invalid_field", "field": "payload.amount_minor"}},
        None,
        "req_from_header",
    )
    assert (error.code, error.field, error.status) == ("invalid_field", "payload.amount_minor", 422)
    assert error.message.startswith("A member is missing")
    assert (error.request_id, error.type, error.title) == (
        "req_1", "/docs/api.md#error-invalid_field", "Invalid field")
    assert "request_id=req_1" in str(error)
    # A problem without the deprecated member, and the request id from the header.
    bare = ApiError.from_response(405, {"code": "method_not_allowed", "field": None}, None, "req_2")
    assert (bare.code, bare.field, bare.request_id) == ("method_not_allowed", None, "req_2")
    # Members of the wrong type are ignored rather than raised on.
    odd = ApiError.from_response(400, {"code": 7, "field": ["x"], "detail": None})
    assert (odd.code, odd.field, odd.message) == (None, None, "fleet-api answered 400")


def test_api_error_carries_code_field_status_and_room_for_a_message() -> None:
    error = ApiError.from_response(
        422, {"error": {"code": "invalid_field", "field": "payload.currency"}})
    assert (error.code, error.field, error.status) == ("invalid_field", "payload.currency", 422)
    assert error.message == "fleet-api answered 422 invalid_field"
    assert not error.retryable
    with_message = ApiError.from_response(
        409, {"error": {"code": "hash_mismatch", "field": None, "message": "not the stored hash"}})
    assert with_message.message == "not the stored hash" and with_message.field is None
    busy = ApiError.from_response(503, {"error": {"code": "busy", "field": None}}, "1")
    assert busy.retryable and busy.retry_after == 1.0
    html = ApiError.from_response(502, None)
    assert (html.code, html.status) == (None, 502)
