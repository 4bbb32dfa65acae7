"""What the client raises. Every refusal keeps fleet's code and, where fleet names one, the
field, so a caller can branch on them rather than on text."""

from __future__ import annotations

from typing import Any, Mapping


class FleetError(Exception):
    """A refusal or failure, with fleet's error code when there is one.

    `code` and `field` are fleet's (docs/api.md#errors: an RFC 9457 problem with `code`
    and `field`); `message` is the problem's `detail` when fleet sends one, else a short
    description made here; `status` is the HTTP status (None off HTTP).
    """

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        field: str | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.field = field
        self.status = status

    def __str__(self) -> str:
        parts = [self.message]
        if self.code:
            parts.append(f"code={self.code}")
        if self.field:
            parts.append(f"field={self.field}")
        if self.status is not None:
            parts.append(f"status={self.status}")
        return " ".join(parts)


class ApiError(FleetError):
    """fleet-api refused a request (any status other than what the route answers with).

    `request_id` is the request's id (the problem's `request_id`, or the `X-Request-Id`
    header), which fleet's log line of the request carries too; `type` is the link to the
    code's section of docs/api.md, `title` its fixed summary.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        field: str | None = None,
        status: int | None = None,
        retry_after: float | None = None,
        request_id: str | None = None,
        type: str | None = None,
        title: str | None = None,
    ) -> None:
        super().__init__(message, code=code, field=field, status=status)
        self.retry_after = retry_after
        self.request_id = request_id
        self.type = type
        self.title = title

    def __str__(self) -> str:
        text = super().__str__()
        return f"{text} request_id={self.request_id}" if self.request_id else text

    @property
    def retryable(self) -> bool:
        """429 and 503: nothing was done, the same request may be sent again."""
        return self.status in (429, 503)

    @classmethod
    def from_response(
        cls,
        status: int,
        body: Any,
        retry_after: str | None = None,
        request_id: str | None = None,
    ) -> ApiError:
        """Reads a problem (`code`, `field`, `detail`, `request_id`, `type`, `title` at the
        top), or the older body `{"error": {"code", "field", "message"?}}`; any other body
        still gives an error with the status, so a proxy's HTML page is reported, not a
        KeyError. `request_id` is the `X-Request-Id` header, used when the body has none."""
        top: Mapping[str, Any] = body if isinstance(body, Mapping) else {}
        old: Mapping[str, Any] = top["error"] if isinstance(top.get("error"), Mapping) else {}

        def text(name: str, *sources: Mapping[str, Any]) -> str | None:
            for source in sources:
                value = source.get(name)
                if isinstance(value, str):
                    return value
            return None

        code = text("code", top, old)
        field = text("field", top, old)
        message = text("detail", top) or text("message", old)
        if message is None:
            message = f"fleet-api answered {status}" + (f" {code}" if code else "")
        seconds: float | None = None
        if retry_after is not None:
            try:
                seconds = float(retry_after)
            except ValueError:
                seconds = None
        return cls(
            message,
            code=code,
            field=field,
            status=status,
            retry_after=seconds,
            request_id=text("request_id", top) or request_id,
            type=text("type", top),
            title=text("title", top),
        )


class PublishError(FleetError):
    """The broker did not take an intent: returned as unroutable (`code` `unroutable`: the
    entry exchange reaches no queue, e.g. a wrong namespace), refused outright
    (`access_refused`: an exchange this user may not write to; `refused`: a `user_id` that
    is not the connection's user, or no such exchange), nacked (`nacked`), or not confirmed
    after every attempt (`not_confirmed`). Resending the same intent is safe."""


class HashMismatch(FleetError):
    """fleet stored another payload hash than the one computed here: the two do not mean
    the same thing, and nobody should approve it on this client's word."""
