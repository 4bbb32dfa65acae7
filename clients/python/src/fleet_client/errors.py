"""What the client raises. Every refusal keeps fleet's code and, where fleet names one, the
field, so a caller can branch on them rather than on text."""

from __future__ import annotations

from typing import Any, Mapping


class FleetError(Exception):
    """A refusal or failure, with fleet's error code when there is one.

    `code` and `field` are fleet's (docs/api.md#errors: `{"error": {"code", "field"}}`);
    `message` is the body's `message` when fleet sends one, else a short description made
    here; `status` is the HTTP status (None off HTTP).
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
    """fleet-api refused a request (any status other than what the route answers with)."""

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        field: str | None = None,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, code=code, field=field, status=status)
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """429 and 503: nothing was done, the same request may be sent again."""
        return self.status in (429, 503)

    @classmethod
    def from_response(
        cls, status: int, body: Any, retry_after: str | None = None
    ) -> ApiError:
        """Reads `{"error": {"code", "field", "message"?}}`; any other body still gives an
        error with the status, so a proxy's HTML page is reported, not a KeyError."""
        error: Mapping[str, Any] = {}
        if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
            error = body["error"]
        code = error.get("code") if isinstance(error.get("code"), str) else None
        field = error.get("field") if isinstance(error.get("field"), str) else None
        message = error.get("message") if isinstance(error.get("message"), str) else None
        if message is None:
            message = f"fleet-api answered {status}" + (f" {code}" if code else "")
        seconds: float | None = None
        if retry_after is not None:
            try:
                seconds = float(retry_after)
            except ValueError:
                seconds = None
        return cls(message, code=code, field=field, status=status, retry_after=seconds)


class PublishError(FleetError):
    """The broker did not take an intent: returned as unroutable (`code` `unroutable`: the
    entry exchange reaches no queue, e.g. a wrong namespace), refused outright
    (`access_refused`: an exchange this user may not write to; `refused`: a `user_id` that
    is not the connection's user, or no such exchange), nacked (`nacked`), or not confirmed
    after every attempt (`not_confirmed`). Resending the same intent is safe."""


class HashMismatch(FleetError):
    """fleet stored another payload hash than the one computed here: the two do not mean
    the same thing, and nobody should approve it on this client's word."""
