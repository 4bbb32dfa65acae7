"""A fleet agent in Python: propose one payment, wait for a person's decision, learn the outcome.

It builds the seed intent (pay invoice inv_9182, 12,500.00 KZT to vendor_77 for tenant
org_482), computes the payload hash a person will approve, submits the intent to fleet-api,
and follows the operation through the outcome events on `fleet.events` (or, when the broker
cannot be reached, by long-polling the API) until it is final. The contract is the Python
client's (clients/python, `fleet_client`).

Settings (environment):
  FLEET_API_URL   the API, default http://127.0.0.1:8080
  FLEET_TOKEN     an agent token: fleetctl token create --principal NAME --role agent --tenant org_482
  AMQP_URL        the broker, as the agent's own broker user:
                  fleetctl principal add --name NAME --role agent --tenant org_482 --broker
  AGENT_PRINCIPAL that principal's name (its queues are named events.NAME/...)
  AMQP_NAMESPACE  the fleet's namespace, default empty
  AGENT_WAIT_S    how long to follow the operation, default 300

Exit status: 0 when fleet told us where the operation stands (whatever the outcome: a
refusal by the provider is an answer, and `unknown` or escalated is handed to
reconciliation or a person, not a failure); 1 when this agent could not do its part.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from typing import Callable

from fleet_client import (
    BrokerError,
    EventListener,
    FleetClient,
    FleetError,
    Intent,
    OperationView,
    Until,
    new_operation_id,
    payload_hash,
)

API_URL = os.environ.get("FLEET_API_URL", "http://127.0.0.1:8080")
AMQP_URL = os.environ.get("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2f")
NAMESPACE = os.environ.get("AMQP_NAMESPACE", "")
PRINCIPAL = os.environ.get("AGENT_PRINCIPAL", "python-agent")
WAIT_S = float(os.environ.get("AGENT_WAIT_S", "300"))


def build_intent() -> Intent:
    # The operation id is made once, before the first send, and reused for every resend:
    # that is what makes a resend the same operation.
    return Intent(
        operation_id=new_operation_id(),
        tenant_id="org_482",
        action="payment.create",
        provider="payments",
        target=None,
        # Money is an integer in minor units: 12,500.00 KZT (2 decimals) is 1250000.
        payload={"invoice_id": "inv_9182", "beneficiary_id": "vendor_77",
                 "amount_minor": 1250000, "currency": "KZT"},
        policy_version="payments-v3",
        data_version="inv_9182@7",
        approval_ttl_seconds=3600,
        rationale="Invoice is due today and matches PO 5531.",
    )


def decided(view: OperationView) -> bool:
    return view.is_decided


def final(view: OperationView) -> bool:
    return view.is_final


async def follow(client: FleetClient, events: EventListener | None, view: OperationView,
                 done: Callable[[OperationView], bool], until: Until,
                 deadline: float) -> tuple[OperationView, EventListener | None]:
    """Wait until done(view): through the events, or by long-polling the API without them.

    Returns the latest view and the event listener (None once the broker was lost).
    """
    said: set[str] = set()
    while not done(view) and time.monotonic() < deadline:
        if view.status == "unknown" or view.escalated:
            # Not final and not a failure: the provider may or may not hold the effect,
            # and reconciliation (or a person, once escalated) will find out. Keep waiting.
            who = "a person" if view.escalated else "reconciliation"
            if who not in said:
                said.add(who)
                print(f"  {view.status.value}{' (escalated)' if view.escalated else ''}: "
                      f"not final, {who} is on it (reason {view.reason})", flush=True)
        if events is not None:
            try:
                event = await events.next_event(timeout=max(0.0, deadline - time.monotonic()))
            except BrokerError as e:
                print(f"  lost the broker ({e.code}); long-polling the API instead", flush=True)
                await events.close()
                events = None
                continue
            # The listener drops redeliveries (it keeps the highest sequence per operation);
            # events of the tenant's other operations are not ours to act on.
            if (event is not None and event.operation_id == view.operation_id
                    and event.tenant_id == view.tenant_id):
                print(f"  event {event.type} #{event.sequence}: status {event.data.status.value}, "
                      f"approval {event.data.approval_status.value}", flush=True)
                view = event.data
        else:
            left = max(0, min(30, int(deadline - time.monotonic())))
            before = view
            view = await asyncio.to_thread(client.wait, view.operation_id, until, left)
            # An escalated operation answers at once: do not spin on it.
            if view.escalated and view == before:
                await asyncio.sleep(min(5, max(0, deadline - time.monotonic())))
    return view, events


async def main() -> int:
    token = os.environ.get("FLEET_TOKEN")
    if not token:
        print("FLEET_TOKEN is not set (fleetctl token create --role agent ...)", file=sys.stderr)
        return 1
    # The listener reports a broker it cannot reach itself; the AMQP library's own log line
    # about it would only repeat that.
    logging.getLogger("aiormq").setLevel(logging.CRITICAL)
    client = FleetClient(API_URL, token)
    intent = build_intent()
    op = intent.operation_id
    print(f"operation {op}: pay 12,500.00 KZT to vendor_77 for invoice inv_9182 (tenant org_482)")
    print(f"payload hash (computed here): {payload_hash(intent)}", flush=True)

    # Subscribe first, submit second: the broker drops events no queue is bound for.
    events: EventListener | None = EventListener(
        AMQP_URL, principal=PRINCIPAL, tenants=[intent.tenant_id], namespace=NAMESPACE)
    try:
        await events.open()
        print("listening to the outcome events of org_482", flush=True)
    except BrokerError as e:
        events = None
        print(f"no broker ({e.code}): following the operation through the API instead",
              flush=True)

    try:
        # The client resends the same bytes after any doubt (the write is idempotent) and
        # checks that fleet stored the hash computed here: the approver sees fleet's hash,
        # and it must be ours, or we and fleet do not mean the same payment.
        view = (await asyncio.to_thread(client.submit, intent)).view
        print(f"submitted: fleet stored the same payload hash; approval {view.approval_status.value}",
              flush=True)

        deadline = time.monotonic() + WAIT_S
        view, events = await follow(client, events, view, decided, "decision", deadline)
        if not decided(view):
            print(f"no decision within {WAIT_S:.0f} s; the approval stays open until "
                  f"{view.approval_expires_at}")
            return 0
        if view.approval_status != "pending":  # else it ended (or was escalated) undecided
            by = f" by {view.decided_by}" if view.decided_by else ""
            print(f"decision: {view.approval_status.value}{by}", flush=True)

        view, events = await follow(client, events, view, final, "final", deadline)
    except FleetError as e:
        print(f"agent error: {e}", file=sys.stderr)
        return 1
    finally:
        if events is not None:
            await events.close()
        client.close()

    if final(view):
        detail = {"succeeded": f"the provider holds {view.external_id}",
                  "failed": f"the provider refused it ({view.error_code})",
                  "cancelled": f"it will never run ({view.reason})",
                  "disputed": "an operator is investigating it"}[view.status.value]
        print(f"outcome: {view.status.value}: {detail}")
    else:
        # Handed over, not failed: ask again later (GET /v1/operations/{id}).
        who = "a person" if view.escalated else "reconciliation"
        print(f"outcome not final yet: {view.status.value}; {who} is on it")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
