"""Following the outcome events on `fleet.events` with aio-pika (docs/events.md)."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections.abc import AsyncIterator, Iterable
from typing import Any

import aio_pika
import aiormq.exceptions
from yarl import URL
from aio_pika.abc import AbstractConnection, AbstractIncomingMessage, AbstractQueue

from .errors import FleetError
from .models import Event, OperationView, Until
from .queue import namespaced

EVENTS_EXCHANGE = "fleet.events"


def routing_word(tenant_id: str) -> str:
    """The tenant as one routing-key word: every byte outside `[A-Za-z0-9_-]` as `%XX`, and
    an encoding longer than 200 bytes as `~` + 32 hex digits of the tenant's SHA-256."""
    word = "".join(
        chr(b) if (48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122 or b in (45, 95)) else f"%{b:02X}"
        for b in tenant_id.encode()
    )
    if len(word) > 200:
        return "~" + hashlib.sha256(tenant_id.encode()).hexdigest()[:32]
    return word


def binding_keys(tenants: Iterable[str], types: Iterable[str] = ("*",)) -> list[str]:
    """`fleet.operation.<type>.<tenant word>` for each type and tenant: the only keys an
    agent's own broker user may bind."""
    return [f"fleet.operation.{t}.{routing_word(tenant)}" for tenant in tenants for t in types]


class SequenceFilter:
    """At least once, in order per operation: keeps the highest `data.sequence` seen per
    operation (by the event's `subject`, which names its tenant and id: two tenants'
    operations may share an id) and says whether an event is new. The view is whole in every event, so an
    event skipped for being old loses nothing."""

    def __init__(self, seen: dict[str, int] | None = None) -> None:
        self.seen: dict[str, int] = dict(seen or {})

    def is_new(self, operation_id: str, sequence: int) -> bool:
        return sequence > self.seen.get(operation_id, 0)

    def record(self, operation_id: str, sequence: int) -> None:
        if sequence > self.seen.get(operation_id, 0):
            self.seen[operation_id] = sequence


class BrokerError(FleetError):
    """The listener could not reach the broker (`code` `broker_unreachable`), or the broker
    refused what it asked (`access_refused` and the like: a queue name outside
    `events.<principal>/`, a binding for another tenant)."""


class ListenerClosed(BrokerError):
    """The listener lost its connection or channel (`code` `listener_closed`); events since
    may be missed, so catch up through the API."""


class EventListener:
    """The outcome events of the agent's tenants, on a queue the listener declares itself.

    The queue is named `events.<principal>/<suffix>` (namespaced), the only names an agent's
    own broker user may declare, and is bound with `fleet.operation.*.<tenant>` for each
    tenant. Open it (`async with`) **before** submitting: the broker drops events that no
    queue is bound for.

    By default the queue is exclusive and auto-deleted: it lives as long as the connection.
    An agent that must not miss events across a restart gives a fixed `queue_suffix` and
    `durable=True`; such a queue outlives the process (with `expires_ms`, the broker deletes
    it after that long unused) and `delete_queue()` removes it.

    Events are acknowledged after the consumer has handled them (when it asks for the next
    one): an event being handled when the process dies is delivered again, and the sequence
    filter drops what was already handled in this process.
    """

    def __init__(
        self,
        amqp_url: str,
        *,
        principal: str,
        tenants: Iterable[str],
        namespace: str = "",
        queue_suffix: str | None = None,
        durable: bool = False,
        expires_ms: int | None = None,
        prefetch: int = 64,
        connect_timeout_s: float = 10.0,
    ) -> None:
        self.connect_timeout_s = connect_timeout_s
        self.amqp_url = amqp_url
        self.namespace = namespace
        self.tenants = list(tenants)
        if not self.tenants:
            raise ValueError("an event listener needs at least one tenant")
        if "/" in principal:
            raise ValueError("a principal's name holds no '/'")
        suffix = queue_suffix or secrets.token_hex(8)
        self.queue_name = namespaced(f"events.{principal}/{suffix}", namespace)
        self.durable = durable
        self.expires_ms = expires_ms
        self.prefetch = prefetch
        self.filter = SequenceFilter()
        self._connection: AbstractConnection | None = None
        self._queue: AbstractQueue | None = None
        # Deliveries wait here for next_event; None says the channel or connection closed.
        self._messages: asyncio.Queue[AbstractIncomingMessage | None] = asyncio.Queue()
        self._live = False
        self._pending: AbstractIncomingMessage | None = None

    async def __aenter__(self) -> EventListener:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        """Connect, declare the queue and bind it for every tenant; raises BrokerError."""
        try:
            await self._open()
        except (aiormq.exceptions.AMQPError, OSError, asyncio.TimeoutError) as e:
            await self.close()
            if "ACCESS_REFUSED" in str(e):  # a wrong password, or a name not ours
                code = "access_refused"
            elif isinstance(e, (aiormq.exceptions.AMQPConnectionError, OSError,
                                asyncio.TimeoutError)):
                code = "broker_unreachable"
            else:
                code = "broker_refused"
            raise BrokerError(f"the event listener could not start: {type(e).__name__}: {e}",
                              code=code) from e

    async def _open(self) -> None:
        # Not the robust connection: a queue of ours that vanished with a lost connection
        # would come back empty, and the caller must know to catch up through the API.
        # Made here rather than by aio_pika.connect so that a connection that never came up
        # is still ours to close (left to the collector, it warns of an un-awaited close).
        self._connection = aio_pika.Connection(URL(self.amqp_url))
        await self._connection.connect(timeout=self.connect_timeout_s)
        self._connection.close_callbacks.add(self._on_close)
        channel = await self._connection.channel()
        channel.close_callbacks.add(self._on_close)
        await channel.set_qos(prefetch_count=self.prefetch)
        arguments: dict[str, Any] = {}
        if self.expires_ms is not None:
            arguments["x-expires"] = self.expires_ms
        self._queue = await channel.declare_queue(
            self.queue_name,
            durable=self.durable,
            exclusive=not self.durable,
            auto_delete=not self.durable,
            arguments=arguments or None,
        )
        exchange = namespaced(EVENTS_EXCHANGE, self.namespace)
        for key in binding_keys(self.tenants):
            await self._queue.bind(exchange, routing_key=key)
        # A callback feeding a queue of our own, not aio-pika's iterator: a wait that times
        # out must leave the consumer as it is.
        await self._queue.consume(self._on_message)
        self._live = True

    async def _on_message(self, message: AbstractIncomingMessage) -> None:
        self._messages.put_nowait(message)

    def _on_close(self, *_: Any) -> None:
        self._live = False
        self._messages.put_nowait(None)

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        self._live = False
        self._pending = None
        if connection is not None and not connection.is_closed:
            # An unacknowledged event goes back to the queue, to be handled again.
            try:
                await connection.close()
            except (aiormq.exceptions.AMQPError, OSError, RuntimeError):
                pass
        self._queue = None

    async def delete_queue(self) -> None:
        """Remove a durable queue once it is no longer needed."""
        if self._queue is not None:
            await self._queue.delete(if_unused=False, if_empty=False)

    async def _ack_pending(self) -> None:
        if self._pending is not None:
            message, self._pending = self._pending, None
            if self._live:
                await message.ack()

    async def next_event(self, timeout: float | None = None) -> Event | None:
        """The next new event (of any operation of the tenants), or None after `timeout`
        seconds without one. Redeliveries and events older than one already handled are
        acknowledged and skipped. Raises `ListenerClosed` once the connection or channel is
        lost: the queue may have gone with it, so catch up through the API."""
        if self._connection is None:
            raise RuntimeError("the listener is not open")
        await self._ack_pending()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            try:
                message = await asyncio.wait_for(self._messages.get(), left)
            except asyncio.TimeoutError:
                return None
            if message is None:
                raise ListenerClosed("the broker connection or channel closed", code="listener_closed")
            try:
                event = Event.from_json(message.body)
            except (ValueError, KeyError, TypeError):
                # Not an outcome event: nothing to act on, and no reason to see it again.
                await message.ack()
                continue
            if not self.filter.is_new(event.subject, event.sequence):
                await message.ack()
                continue
            self.filter.record(event.subject, event.sequence)
            self._pending = message
            return event

    async def events(self) -> AsyncIterator[Event]:
        """Every new event, as it comes."""
        while True:
            event = await self.next_event()
            if event is not None:
                yield event

    async def wait(
        self,
        operation_id: str,
        until: Until = "final",
        timeout: float = 300.0,
        *,
        on_event: Any = None,
        tenant: str | None = None,
    ) -> OperationView | None:
        """The first view of `operation_id` (of `tenant`, when given: operation ids are
        unique per tenant) that satisfies `until` (escalation included, as the API's
        long-poll), or None at the timeout. Events of other operations are acknowledged and
        passed over; `on_event(event)` is called for each new event of this operation."""
        deadline = time.monotonic() + timeout
        while True:
            event = await self.next_event(max(0.0, deadline - time.monotonic()))
            if event is None:
                return None
            if event.operation_id != operation_id:
                continue
            if tenant is not None and event.tenant_id != tenant:
                continue
            if on_event is not None:
                on_event(event)
            if event.data.satisfies(until):
                await self._ack_pending()
                return event.data

