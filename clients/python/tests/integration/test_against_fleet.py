"""The client against a real fleet (run-tests-against-local-stack.sh starts one)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import time
from pathlib import Path

import pika
import pytest

from fleet_client import (
    ApiError,
    ApprovalStatus,
    Event,
    EventListener,
    FleetClient,
    PublishError,
    QueueSubmitter,
    Status,
    new_operation_id,
    payload_hash,
)

from .conftest import Fleet, seed_payment


def test_submit_over_http_stores_the_hash_computed_here_and_a_resend_changes_nothing(
    fleet: Fleet, client: FleetClient
) -> None:
    intent = seed_payment()
    first = client.submit(intent)
    assert first.created
    assert first.view.payload_hash == payload_hash(intent)
    assert first.view.status is Status.NOT_STARTED
    assert first.view.approval_status is ApprovalStatus.PENDING
    assert first.view.submitted_by == fleet.principal
    again = client.submit(intent)
    assert not again.created
    assert again.view.payload_hash == first.view.payload_hash


def test_payload_hash_equals_fleetctl_hash(fleet: Fleet, tmp_path: Path) -> None:
    intents = [
        seed_payment().to_dict(),
        {
            "schema": "intent.v1", "operation_id": new_operation_id(), "tenant_id": "org_482",
            "action": "crm.deal.update", "provider": "crm", "target": "deal_01J",
            "payload": {"expected_version": 7,
                        "patch": {"stage": "переговоры 😀", "probability": 0.35, "score": 1e21,
                                  "tiny": 5e-324, "neg": -0.0, "esc": "a\"b\\c\u0001",
                                  "\U0001F600": 1, "\uFB33": 2}},
            "policy_version": "crm-v1", "data_version": "deal_01J@7",
            "approval_ttl_seconds": 86400, "rationale": None, "supersedes": None,
        },
    ]
    for i, intent in enumerate(intents):
        path = tmp_path / f"intent-{i}.json"
        path.write_text(json.dumps(intent, ensure_ascii=False), encoding="utf-8")
        out = subprocess.run([fleet.fleetctl, "hash", str(path)], check=True,
                             capture_output=True, text=True, timeout=30).stdout
        assert out.strip().splitlines()[-1] == payload_hash(intent)


def test_submit_over_the_queue_records_the_principal_as_submitter(
    fleet: Fleet, client: FleetClient
) -> None:
    intent = seed_payment()
    with QueueSubmitter(fleet.agent_amqp_url, namespace=fleet.namespace) as queue:
        queue.publish(intent)
    deadline = time.monotonic() + 30
    while True:
        try:
            view = client.get(intent.operation_id)
            break
        except ApiError as e:
            # Prepare stores it asynchronously: not_found until then.
            assert e.code == "not_found", e
            assert time.monotonic() < deadline, "prepare did not store the queued intent in 30 s"
            time.sleep(0.2)
    assert view.submitted_by == fleet.principal
    assert view.payload_hash == payload_hash(intent)
    assert view.approval_status is ApprovalStatus.PENDING


def test_a_user_id_other_than_the_connections_is_refused_by_the_broker(fleet: Fleet) -> None:
    with QueueSubmitter(fleet.agent_amqp_url, namespace=fleet.namespace,
                        broker_user="someone-else") as queue:
        with pytest.raises(PublishError) as refused:
            queue.publish(seed_payment())
    assert refused.value.code == "refused"


def test_wait_for_decision_returns_once_fleetctl_approve_approved_it_then_final(
    fleet: Fleet, client: FleetClient
) -> None:
    view = client.submit(seed_payment()).view
    approver = threading.Timer(1.0, fleet.approve, args=(view,))
    approver.start()
    try:
        started = time.monotonic()
        decided = client.wait(view.operation_id, until="decision", timeout=60)
        waited = time.monotonic() - started
    finally:
        approver.join()
    assert decided.approval_status is ApprovalStatus.APPROVED
    assert decided.decided_by == "alice"
    assert waited >= 0.9  # held by the long-poll until the approval, not answered at once
    final = client.wait(view.operation_id, until="final", timeout=60)
    assert final.status is Status.SUCCEEDED
    assert final.external_id


def test_wait_times_out_with_the_current_view(client: FleetClient) -> None:
    view = client.submit(seed_payment()).view
    started = time.monotonic()
    still = client.wait(view.operation_id, until="decision", timeout=1)
    assert time.monotonic() - started < 10
    assert still.approval_status is ApprovalStatus.PENDING
    assert not still.satisfies("decision")


async def test_listener_sees_prepared_to_succeeded_once_each_and_drops_duplicates(
    fleet: Fleet, client: FleetClient
) -> None:
    intent = seed_payment()
    events: list[Event] = []
    bodies: list[bytes] = []
    async with EventListener(fleet.agent_amqp_url, principal=fleet.principal,
                             tenants=["org_482"], namespace=fleet.namespace) as listener:
        # Bound before submitting: the broker drops events no queue is bound for.
        view = (await asyncio.to_thread(client.submit, intent)).view
        decided = await listener.wait(view.operation_id, "decision", timeout=5,
                                      on_event=events.append)
        assert decided is None  # nobody approved yet: only `prepared` came
        await asyncio.to_thread(fleet.approve, view)
        final = await listener.wait(view.operation_id, "final", timeout=60,
                                    on_event=events.append)
        assert final is not None and final.status is Status.SUCCEEDED

        names = [e.name for e in events]
        assert names[0] == "prepared" and names[-1] == "succeeded"
        assert "approved" in names and "executing" in names
        assert [e.sequence for e in events] == list(range(1, len(events) + 1))

        # Every event again, as a redelivery would bring it, then one with the next
        # sequence: the listener drops the copies and hands over only the new one.
        def body(e: Event, sequence: int) -> bytes:
            return json.dumps({"specversion": "1.0", "id": f"{e.subject}.{sequence}",
                               "source": e.source, "type": e.type, "subject": e.subject,
                               "time": e.time, "datacontenttype": "application/json",
                               "data": dict(e.data.raw, sequence=sequence)}).encode()

        copies = [body(e, e.sequence) for e in events]
        newer = body(events[-1], len(events) + 1)
        await asyncio.to_thread(_put_in_queue, fleet.admin_amqp_url, listener.queue_name,
                                copies + [newer])
        next_one = await listener.next_event(timeout=10)
        assert next_one is not None and next_one.sequence == len(events) + 1
        assert await listener.next_event(timeout=1) is None


def _put_in_queue(admin_url: str, queue: str, bodies: list[bytes]) -> None:
    """Publishes straight into a queue as the broker's admin (the agent's user may not use
    the default exchange), with confirms, so they are in the queue when this returns."""
    connection = pika.BlockingConnection(pika.URLParameters(admin_url))
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        for body in bodies:
            channel.basic_publish("", queue, body, mandatory=True)
    finally:
        connection.close()


def test_an_invalid_field_raises_api_error_with_code_field_and_status(client: FleetClient) -> None:
    intent = seed_payment(payload={"invoice_id": "inv_9182", "beneficiary_id": "vendor_77",
                                   "amount_minor": 1250000, "currency": "kzt"})
    with pytest.raises(ApiError) as refused:
        client.submit(intent)
    assert refused.value.status == 422
    assert refused.value.code == "invalid_field"
    assert refused.value.field == "payload.currency"
    assert refused.value.type == "/docs/api.md#error-invalid_field"
    assert (refused.value.request_id or "").startswith("req_")


def test_an_unknown_operation_raises_not_found(client: FleetClient) -> None:
    with pytest.raises(ApiError) as refused:
        client.get(new_operation_id())
    assert (refused.value.status, refused.value.code) == (404, "not_found")
