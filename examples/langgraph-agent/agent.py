"""A LangGraph agent that proposes a payment to fleet, waits for a person, and learns the outcome.

The graph is deterministic (no language model): `plan` writes the tool call a model would
have written (pay invoice inv_9182, 12,500.00 KZT to vendor_77, tenant org_482), `tools`
runs it (the `propose_payment` tool submits the intent through the Python client),
`await_outcome` interrupts the graph until fleet's outcome event resumes it, and `report`
prints the outcome. Every step is checkpointed in SQLite, so the process may die anywhere
and a new one with the same thread id carries on from the last step that finished.

    python agent.py --thread-id invoice-inv_9182 --checkpoints agent.sqlite

The events are followed on a durable queue of the agent's own (`events.<principal>/lg-<thread
id>`), declared before the proposal: the events published while no agent process runs wait
there for the next one.

Settings (environment): FLEET_API_URL, FLEET_TOKEN, AMQP_URL (the agent's own broker user),
AGENT_PRINCIPAL, AMQP_NAMESPACE and AGENT_WAIT_S, as for examples/python-agent.

Exit status: 0 when the thread ended with fleet's answer (or already had), or fleet gave no
decision in time (the approval stays open); 1 when this agent could not do its part.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

from fleet_client import (
    EventListener,
    FleetClient,
    FleetError,
    Intent,
    OperationView,
    new_operation_id,
)

API_URL = os.environ.get("FLEET_API_URL", "http://127.0.0.1:8080")
AMQP_URL = os.environ.get("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2f")
NAMESPACE = os.environ.get("AMQP_NAMESPACE", "")
PRINCIPAL = os.environ.get("AGENT_PRINCIPAL", "langgraph-agent")
WAIT_S = float(os.environ.get("AGENT_WAIT_S", "300"))
TENANT = "org_482"
# A durable queue nobody consumes from is removed by the broker after a day.
QUEUE_EXPIRES_MS = 24 * 3600 * 1000

_client: FleetClient | None = None


def client() -> FleetClient:
    global _client
    if _client is None:
        _client = FleetClient(API_URL, os.environ["FLEET_TOKEN"])
    return _client


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    operation_id: str
    payload_hash: str
    outcome: dict[str, Any]


@tool
def propose_payment(operation_id: str, invoice_id: str, beneficiary_id: str,
                    amount_minor: int, currency: str) -> str:
    """Propose a payment to fleet; a person approves it before anything is paid.

    amount_minor is in the currency's minor unit (12,500.00 KZT is 1250000). The operation
    id is made once, by the step before, so running this again sends the same operation.
    """
    intent = Intent(
        operation_id=operation_id,
        tenant_id=TENANT,
        action="payment.create",
        provider="payments",
        payload={"invoice_id": invoice_id, "beneficiary_id": beneficiary_id,
                 "amount_minor": amount_minor, "currency": currency},
        policy_version="payments-v3",
        data_version=f"{invoice_id}@7",
        approval_ttl_seconds=3600,
        rationale="Invoice is due today and matches PO 5531.",
    )
    # Resent as the same bytes after any doubt; raises unless fleet stored our hash.
    view = client().submit(intent).view
    return json.dumps({"operation_id": view.operation_id, "payload_hash": view.payload_hash,
                       "approval_status": view.approval_status.value})


def plan(state: State) -> State:
    """What a model would decide here, written down: one tool call, with a fresh id."""
    operation_id = new_operation_id()
    call = {"name": "propose_payment", "id": f"call_{operation_id}",
            "args": {"operation_id": operation_id, "invoice_id": "inv_9182",
                     "beneficiary_id": "vendor_77", "amount_minor": 1250000, "currency": "KZT"}}
    return {"messages": [AIMessage(content="Pay invoice inv_9182: 12,500.00 KZT to vendor_77.",
                                   tool_calls=[call])]}


def record(state: State) -> State:
    result = next(m for m in reversed(state["messages"]) if isinstance(m, ToolMessage))
    proposed = json.loads(str(result.content))
    return {"operation_id": proposed["operation_id"], "payload_hash": proposed["payload_hash"]}


def await_outcome(state: State) -> State:
    # Nothing before interrupt() has effects: on resume the node runs again from the top,
    # and interrupt() then returns what the graph was resumed with (the final view).
    view = interrupt({"operation_id": state["operation_id"],
                      "payload_hash": state["payload_hash"], "waiting_for": "final"})
    return {"outcome": view}


def report(state: State) -> State:
    view = OperationView.from_dict(state["outcome"])
    if view.is_final:
        detail = {"succeeded": f"the provider holds {view.external_id}",
                  "failed": f"the provider refused it ({view.error_code})",
                  "cancelled": f"it will never run ({view.reason})",
                  "disputed": "an operator is investigating it"}[view.status.value]
        print(f"outcome: {view.status.value}: {detail}", flush=True)
    else:
        who = "a person" if view.escalated else "reconciliation"
        print(f"outcome not final yet: {view.status.value}; {who} is on it", flush=True)
    return {}


def build_graph() -> StateGraph:
    graph = StateGraph(State)
    graph.add_node("plan", plan)
    # Tool errors are not handed back to a model (there is none): they end the run, and
    # the next run retries the step from its checkpoint.
    graph.add_node("tools", ToolNode([propose_payment], handle_tool_errors=False))
    graph.add_node("record", record)
    graph.add_node("await_outcome", await_outcome)
    graph.add_node("report", report)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "tools")
    graph.add_edge("tools", "record")
    graph.add_edge("record", "await_outcome")
    graph.add_edge("await_outcome", "report")
    graph.add_edge("report", END)
    return graph


async def outcome_of(listener: EventListener, operation_id: str, deadline: float) -> OperationView | None:
    """The operation's final view from its events, or None at the deadline.

    Every 30 s without the outcome the API is asked too: a queue that was lost (expired,
    deleted) would otherwise leave the thread waiting for events that will not come.
    """
    def show(event: Any) -> None:
        print(f"  event {event.type} #{event.sequence}: status {event.data.status.value}, "
              f"approval {event.data.approval_status.value}", flush=True)

    said_handed_over = False
    while time.monotonic() < deadline:
        view = await listener.wait(operation_id, "final",
                                   timeout=min(30.0, max(0.0, deadline - time.monotonic())),
                                   on_event=show)
        if view is None:
            view = await asyncio.to_thread(client().get, operation_id)
            if view.is_final:
                print("  (the outcome read from the API: its events were not on the queue)",
                      flush=True)
        if view.is_final:
            return view
        if view.escalated and not said_handed_over:
            # Escalated: a person settles it; keep waiting for the final event.
            said_handed_over = True
            print(f"  {view.status.value} (escalated): not final, a person is on it", flush=True)
    return None


async def run(thread_id: str, checkpoints: str) -> int:
    config = {"configurable": {"thread_id": thread_id}}
    async with AsyncSqliteSaver.from_conn_string(checkpoints) as saver:
        graph = build_graph().compile(checkpointer=saver)
        state = await graph.aget_state(config)
        if state.values and not state.next:
            print(f"thread {thread_id}: finished before; its outcome was reported then", flush=True)
            return 0

        # The queue first, the proposal second: the broker drops events no queue is bound
        # for. Durable and named after the thread, so a restarted agent finds the events
        # published while it was down.
        listener = EventListener(AMQP_URL, principal=PRINCIPAL, tenants=[TENANT],
                                 namespace=NAMESPACE, queue_suffix=f"lg-{thread_id}",
                                 durable=True, expires_ms=QUEUE_EXPIRES_MS)
        await listener.open()
        try:
            if not state.values:
                print(f"thread {thread_id}: new; proposing the payment", flush=True)
                # durability="sync": the interrupt is on disk before this returns, so a
                # process killed after the next line resumes at the interrupt.
                await graph.ainvoke({"messages": []}, config, durability="sync")
            else:
                print(f"thread {thread_id}: resumed from its checkpoint", flush=True)
            state = await graph.aget_state(config)
            waiting = state.tasks[0].interrupts[0].value
            operation_id = waiting["operation_id"]
            print(f"proposed {operation_id} (payload hash {waiting['payload_hash']}); "
                  f"interrupted until fleet's outcome", flush=True)

            view = await outcome_of(listener, operation_id, time.monotonic() + WAIT_S)
            if view is None:
                print(f"no outcome within {WAIT_S:.0f} s; run again with --thread-id {thread_id}",
                      flush=True)
                return 0
            await graph.ainvoke(Command(resume=view.raw), config, durability="sync")
            await listener.delete_queue()
        finally:
            await listener.close()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--thread-id", required=True,
                        help="the conversation to start or carry on")
    parser.add_argument("--checkpoints", default="langgraph-agent.sqlite",
                        help="the SQLite file the graph's state is kept in")
    args = parser.parse_args()
    if not os.environ.get("FLEET_TOKEN"):
        print("FLEET_TOKEN is not set (fleetctl token create --role agent ...)", file=sys.stderr)
        return 1
    logging.getLogger("aiormq").setLevel(logging.CRITICAL)
    try:
        return asyncio.run(run(args.thread_id, args.checkpoints))
    except FleetError as e:
        print(f"agent error: {e}", file=sys.stderr)
        return 1
    finally:
        if _client is not None:
            _client.close()


if __name__ == "__main__":
    sys.exit(main())
