"""Submitting over the queue door with pika (docs/protocol.md#queues-and-exchanges)."""

from __future__ import annotations

import json
import time
from typing import Any, Mapping, Union
from urllib.parse import unquote, urlparse

import pika
import pika.exceptions

from .errors import PublishError
from .models import Intent

ENTRY_EXCHANGE = "fleet.to.intents.prepare"
ROUTING_KEY = "intents.prepare"


def namespaced(name: str, namespace: str = "") -> str:
    """A broker name as the deployment spells it: `<namespace>.<name>`, or as is."""
    return f"{namespace}.{name}" if namespace else name


class QueueSubmitter:
    """Publishes intents to `fleet.to.intents.prepare` as the agent's own broker user.

    Each message carries `user_id` = the broker user (the broker checks it against the
    connection's user, and prepare records the principal that speaks as it as
    `submitted_by`), is persistent, and is published `mandatory` with publisher confirms:
    it counts as sent only once the broker confirmed it and did not return it. After any
    doubt the same bytes are sent again; prepare stores an operation once.
    """

    def __init__(
        self,
        amqp_url: str,
        *,
        namespace: str = "",
        broker_user: str | None = None,
        attempts: int = 5,
    ) -> None:
        self.amqp_url = amqp_url
        self.namespace = namespace
        # The URL's user is who the connection is; user_id must be that name.
        self.broker_user = broker_user or unquote(urlparse(amqp_url).username or "")
        if not self.broker_user:
            raise ValueError("the AMQP URL names no user, and no broker_user was given")
        self.attempts = attempts
        self._connection: pika.BlockingConnection | None = None
        self._channel: Any = None

    def __enter__(self) -> QueueSubmitter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._connection is not None and self._connection.is_open:
            try:
                self._connection.close()
            except pika.exceptions.AMQPError:
                pass
        self._connection = None
        self._channel = None

    def _open_channel(self) -> Any:
        if self._channel is None or not self._channel.is_open:
            self.close()
            self._connection = pika.BlockingConnection(pika.URLParameters(self.amqp_url))
            channel = self._connection.channel()
            channel.confirm_delivery()
            self._channel = channel
        return self._channel

    def publish(self, intent: Union[Intent, Mapping[str, Any]]) -> None:
        """Publish one intent; returns once the broker confirmed it, else raises PublishError.

        A returned message (`unroutable`) is not retried: the entry exchange reaches no
        queue, which another attempt will not change.
        """
        if isinstance(intent, Intent):
            body, operation_id = intent.to_json(), intent.operation_id
        else:
            body = json.dumps(dict(intent), ensure_ascii=False, separators=(",", ":")).encode()
            operation_id = str(intent.get("operation_id", ""))
        properties = pika.BasicProperties(
            content_type="application/json",
            delivery_mode=pika.DeliveryMode.Persistent,
            user_id=self.broker_user,
            message_id=operation_id or None,
        )
        last: Exception | None = None
        for attempt in range(1, self.attempts + 1):
            try:
                channel = self._open_channel()
                channel.basic_publish(
                    exchange=namespaced(ENTRY_EXCHANGE, self.namespace),
                    routing_key=namespaced(ROUTING_KEY, self.namespace),
                    body=body,
                    properties=properties,
                    mandatory=True,
                )
                return
            except pika.exceptions.UnroutableError as e:
                raise PublishError(
                    "the broker returned the intent: no queue behind the entry exchange "
                    "(is the namespace right?)",
                    code="unroutable",
                ) from e
            except pika.exceptions.ChannelClosedByBroker as e:
                # The broker judged the message itself (a user_id that is not the
                # connection's user, an exchange this user may not write to, or none):
                # sending it again gets the same answer.
                self.close()
                raise PublishError(
                    f"the broker refused the intent: {e.reply_code} {e.reply_text}",
                    code="access_refused" if e.reply_code == 403 else "refused",
                ) from e
            except pika.exceptions.NackError as e:
                last = PublishError("the broker refused the intent", code="nacked")
                last.__cause__ = e
            except (pika.exceptions.AMQPError, OSError) as e:
                # A channel closed by the broker (ACCESS_REFUSED for a user_id that is not
                # ours, a missing exchange) or a lost connection: open a new one.
                last = e
                self.close()
            time.sleep(min(attempt, 5))
        if isinstance(last, PublishError):
            raise last
        raise PublishError(
            f"the broker did not confirm the intent after {self.attempts} attempts: {last!r}",
            code="not_confirmed",
        ) from last
