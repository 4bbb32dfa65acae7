"""A fleet agent in Python: propose one payment, wait for a person's decision, learn the outcome.

It builds the seed intent (pay invoice inv_9182, 12,500.00 KZT to vendor_77 for tenant
org_482), computes the payload hash a person will approve, submits the intent to fleet-api,
and follows the operation through the outcome events on `fleet.events` (or, when the broker
cannot be reached, by long-polling the API) until it is final.

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

import hashlib
import json
import os
import secrets
import sys
import time

import pika
import requests
import rfc8785

API_URL = os.environ.get("FLEET_API_URL", "http://127.0.0.1:8080").rstrip("/")
AMQP_URL = os.environ.get("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2f")
NAMESPACE = os.environ.get("AMQP_NAMESPACE", "")
PRINCIPAL = os.environ.get("AGENT_PRINCIPAL", "python-agent")
WAIT_S = float(os.environ.get("AGENT_WAIT_S", "300"))

FINAL = {"succeeded", "failed", "cancelled", "disputed"}
# The eight members a person approves; the rest of an intent explains or links.
SNAPSHOT_MEMBERS = ["operation_id", "tenant_id", "action", "provider", "target",
                    "payload", "policy_version", "data_version"]


class AgentError(Exception):
    """Something this agent could not do; fleet has not decided anything wrong."""


def new_ulid() -> str:
    """A ULID: 48 bits of milliseconds, then 80 random bits, in Crockford base32 (26 chars)."""
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(secrets.token_bytes(10), "big")
    return "".join(alphabet[(value >> shift) & 31] for shift in range(125, -1, -5))


def build_intent() -> dict:
    # The operation id is made once, before the first send, and reused for every resend:
    # that is what makes a resend the same operation.
    return {
        "schema": "intent.v1",
        "operation_id": "op_" + new_ulid(),
        "tenant_id": "org_482",
        "action": "payment.create",
        "provider": "payments",
        "target": None,
        # Money is an integer in minor units: 12,500.00 KZT (2 decimals) is 1250000.
        "payload": {"invoice_id": "inv_9182", "beneficiary_id": "vendor_77",
                    "amount_minor": 1250000, "currency": "KZT"},
        "policy_version": "payments-v3",
        "data_version": "inv_9182@7",
        "approval_ttl_seconds": 3600,
        "rationale": "Invoice is due today and matches PO 5531.",
        "supersedes": None,
    }


def payload_hash(intent: dict) -> str:
    """The hash a person approves: SHA-256 of the RFC 8785 form of the snapshot."""
    snapshot = {k: intent.get(k) for k in SNAPSHOT_MEMBERS}
    return "sha256:" + hashlib.sha256(rfc8785.dumps(snapshot)).hexdigest()


def routing_word(tenant: str) -> str:
    """The tenant as one routing-key word: bytes outside [A-Za-z0-9_-] as %XX."""
    word = "".join(chr(b) if chr(b).isascii() and (chr(b).isalnum() or chr(b) in "_-")
                   else f"%{b:02X}" for b in tenant.encode())
    return word if len(word) <= 200 else "~" + hashlib.sha256(tenant.encode()).hexdigest()[:32]


class Events:
    """Outcome events of one tenant, on a queue of our own.

    The queue is exclusive and auto-deleted (it lives as long as this connection) and is
    bound before we submit: the broker drops events no queue is bound for, so binding first
    means we miss none of our operation's. Our broker user may declare queues named
    `events.<principal>/...` only, and bind them with our tenants' keys only.
    """

    def __init__(self, tenant: str):
        self.connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
        channel = self.connection.channel()
        prefix = f"{NAMESPACE}." if NAMESPACE else ""
        queue = f"{prefix}events.{PRINCIPAL}/{secrets.token_hex(8)}"
        channel.queue_declare(queue=queue, exclusive=True, auto_delete=True)
        exchange = f"{prefix}fleet.events"
        channel.queue_bind(queue=queue, exchange=exchange,
                           routing_key=f"fleet.operation.*.{routing_word(tenant)}")
        self.channel = channel
        self.messages = channel.consume(queue, inactivity_timeout=1.0)
        self.seen = {}  # operation id -> highest sequence acted on

    def next_view(self, operation_id: str, deadline: float):
        """The operation's view from its next new event, or None at the deadline."""
        while time.monotonic() < deadline:
            method, _, body = next(self.messages)
            if method is None:  # a second without messages: look at the clock again
                continue
            event = json.loads(body)
            data = event["data"]
            # At least once, in order per operation: skip other operations and redeliveries.
            fresh = (event["subject"] == operation_id
                     and data["sequence"] > self.seen.get(operation_id, 0))
            if fresh:
                self.seen[operation_id] = data["sequence"]
                print(f"  event {event['type']} #{data['sequence']}: status {data['status']}, "
                      f"approval {data['approval_status']}", flush=True)
            self.channel.basic_ack(method.delivery_tag)  # acted on (or not ours)
            if fresh:
                return data
        return None

    def close(self):
        try:
            self.connection.close()
        except pika.exceptions.AMQPError:
            pass


class Api:
    def __init__(self, token: str):
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"

    def submit(self, intent: dict) -> dict:
        """POST the intent; resend the same bytes after any doubt (the write is idempotent)."""
        body = json.dumps(intent).encode()
        for attempt in range(1, 6):
            try:
                r = self.session.post(f"{API_URL}/v1/intents", data=body, timeout=15,
                                      headers={"Content-Type": "application/json"})
            except requests.RequestException as e:
                print(f"  submit attempt {attempt}: {type(e).__name__}; sending it again", flush=True)
            else:
                if r.status_code in (200, 202):
                    return r.json()
                if r.status_code not in (429, 503):
                    raise AgentError(f"fleet refused the intent: {r.status_code} {r.text}")
                print(f"  submit attempt {attempt}: {r.status_code}; sending it again", flush=True)
            time.sleep(attempt)
        raise AgentError("the API did not take the intent after 5 attempts")

    def wait(self, operation_id: str, wait_for: str, timeout_s: int) -> dict:
        """Long-poll: answered when the condition holds, or with the current view at the timeout."""
        r = self.session.get(f"{API_URL}/v1/operations/{operation_id}",
                             params={"wait_for": wait_for, "timeout_s": timeout_s},
                             timeout=timeout_s + 15)
        if r.status_code == 429:  # every wait slot taken: come back in a second
            time.sleep(1)
            return self.wait(operation_id, wait_for, timeout_s)
        r.raise_for_status()
        return r.json()


def decided(view: dict) -> bool:
    return (view["approval_status"] != "pending" or view["status"] in FINAL
            or view["escalated"])


def final(view: dict) -> bool:
    return view["status"] in FINAL


def follow(api: Api, events, view: dict, done, wait_for: str, deadline: float):
    """Wait until done(view): through the events, or by long-polling the API without them.

    Returns the latest view and the event feed (None once the broker was lost).
    """
    said = set()
    while not done(view) and time.monotonic() < deadline:
        if view["status"] == "unknown" or view["escalated"]:
            # Not final and not a failure: the provider may or may not hold the effect,
            # and reconciliation (or a person, once escalated) will find out. Keep waiting.
            who = "a person" if view["escalated"] else "reconciliation"
            if who not in said:
                said.add(who)
                print(f"  {view['status']}{' (escalated)' if view['escalated'] else ''}: "
                      f"not final, {who} is on it (reason {view['reason']})", flush=True)
        if events is not None:
            try:
                newer = events.next_view(view["operation_id"], deadline)
            except (pika.exceptions.AMQPError, OSError) as e:
                print(f"  lost the broker ({type(e).__name__}); long-polling the API instead", flush=True)
                events = None
                continue
            if newer is not None:
                view = newer
        else:
            left = int(max(0, min(30, deadline - time.monotonic())))
            before = view
            view = api.wait(view["operation_id"], wait_for, left)
            # An escalated operation answers at once: do not spin on it.
            if view["escalated"] and view == before:
                time.sleep(min(5, max(0, deadline - time.monotonic())))
    return view, events


def main() -> int:
    token = os.environ.get("FLEET_TOKEN")
    if not token:
        print("FLEET_TOKEN is not set (fleetctl token create --role agent ...)", file=sys.stderr)
        return 1
    api = Api(token)
    intent = build_intent()
    op, local_hash = intent["operation_id"], payload_hash(intent)
    print(f"operation {op}: pay 12,500.00 KZT to vendor_77 for invoice inv_9182 (tenant org_482)")
    print(f"payload hash (computed here): {local_hash}", flush=True)

    # Subscribe first, submit second.
    try:
        events = Events(intent["tenant_id"])
        print("listening to the outcome events of org_482", flush=True)
    except (pika.exceptions.AMQPError, OSError) as e:
        events = None
        print(f"no broker ({type(e).__name__}): following the operation through the API instead",
              flush=True)

    try:
        view = api.submit(intent)
        # The approver sees the hash fleet computed; it must be the one we computed, or we
        # and fleet do not mean the same payment.
        if view["payload_hash"] != local_hash:
            raise AgentError(f"fleet's payload hash {view['payload_hash']} differs from ours")
        print(f"submitted: fleet stored the same payload hash; approval {view['approval_status']}",
              flush=True)

        deadline = time.monotonic() + WAIT_S
        view, events = follow(api, events, view, decided, "decision", deadline)
        if not decided(view):
            print(f"no decision within {WAIT_S:.0f} s; the approval stays open until "
                  f"{view['approval_expires_at']}")
            return 0
        if view["approval_status"] != "pending":  # else it ended (or was escalated) undecided
            by = f" by {view['decided_by']}" if view["decided_by"] else ""
            print(f"decision: {view['approval_status']}{by}", flush=True)

        view, events = follow(api, events, view, final, "final", deadline)
    except AgentError as e:
        print(f"agent error: {e}", file=sys.stderr)
        return 1
    except requests.RequestException as e:
        print(f"agent error: the API: {e}", file=sys.stderr)
        return 1
    finally:
        if events is not None:
            events.close()

    if final(view):
        detail = {"succeeded": f"the provider holds {view['external_id']}",
                  "failed": f"the provider refused it ({view['error_code']})",
                  "cancelled": f"it will never run ({view['reason']})",
                  "disputed": "an operator is investigating it"}[view["status"]]
        print(f"outcome: {view['status']}: {detail}")
    else:
        # Handed over, not failed: ask again later (GET /v1/operations/{id}).
        who = "a person" if view["escalated"] else "reconciliation"
        print(f"outcome not final yet: {view['status']}; {who} is on it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
