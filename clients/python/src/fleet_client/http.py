"""fleet-api over HTTP with an agent's bearer token (docs/api.md)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Union
from urllib.parse import quote

import requests

from .errors import ApiError, HashMismatch
from .hashing import payload_hash
from .mandates import Coverage, MandateStanding
from .models import Intent, OperationView, Until

# fleet holds a long-poll for at most 60 s; the HTTP timeout leaves room for the answer.
MAX_POLL_S = 60
_HTTP_SLACK_S = 15


@dataclass(frozen=True)
class Submitted:
    """The answer to a submission: the view, and whether this call stored it (202) or the
    same snapshot was already there (200: a resend)."""

    view: OperationView
    created: bool


class FleetClient:
    """Submit intents and follow operations through fleet-api.

    Submissions are resent as the same bytes after a transport error, a 429 or a 503 (the
    write is idempotent: the same operation id with the same snapshot is stored once);
    every other refusal raises `ApiError` with fleet's code and field.
    """

    def __init__(
        self,
        api_url: str,
        token: str,
        *,
        attempts: int = 5,
        session: requests.Session | None = None,
        request_timeout_s: float = 15.0,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.attempts = attempts
        self.request_timeout_s = request_timeout_s
        self.session = session or requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> FleetClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def submit(
        self, intent: Union[Intent, Mapping[str, Any]], *, check_hash: bool = True
    ) -> Submitted:
        """POST /v1/intents. With `check_hash`, raises `HashMismatch` unless fleet stored the
        payload hash computed here: a person approves fleet's hash, which must be ours."""
        if isinstance(intent, Intent):
            body = intent.to_json()
        else:
            body = json.dumps(dict(intent), ensure_ascii=False, separators=(",", ":")).encode()
        response = self._send(
            "POST",
            "/v1/intents",
            data=body,
            headers={"Content-Type": "application/json"},
            timeout=self.request_timeout_s,
            retry=True,
        )
        view = OperationView.from_dict(response.json())
        if check_hash:
            local = payload_hash(intent)
            if view.payload_hash != local:
                raise HashMismatch(
                    f"fleet stored {view.payload_hash}, this client computed {local}",
                    code="hash_mismatch",
                    field="payload_hash",
                )
        return Submitted(view=view, created=response.status_code == 202)

    def get(self, operation_id: str) -> OperationView:
        """GET /v1/operations/{id}: the operation's current view (404 `not_found` raises)."""
        response = self._send(
            "GET", self._operation_path(operation_id), timeout=self.request_timeout_s, retry=True
        )
        return OperationView.from_dict(response.json())

    def wait(self, operation_id: str, until: Until = "final", timeout: float = 300.0) -> OperationView:
        """Long-poll until the decision (`until="decision"`) or the final outcome
        (`until="final"`), or until `timeout` seconds have passed.

        Ends as fleet's `wait_for` does: also when the operation is escalated to a person.
        At the timeout it returns the current view, not an error: look at
        `view.satisfies(until)`.
        """
        if until not in ("decision", "final"):
            raise ValueError(f"until must be 'decision' or 'final', not {until!r}")
        deadline = time.monotonic() + timeout
        while True:
            left = max(0, min(MAX_POLL_S, int(deadline - time.monotonic())))
            response = self._send(
                "GET",
                self._operation_path(operation_id),
                params={"wait_for": until, "timeout_s": left},
                timeout=left + _HTTP_SLACK_S,
                retry=True,
            )
            view = OperationView.from_dict(response.json())
            if view.satisfies(until) or time.monotonic() >= deadline or left == 0:
                return view

    def mandates(self) -> list[MandateStanding]:
        """GET /v1/mandates: the standing mandates made for this agent (or for anyone) in
        its tenants, newest first, each with what is left of it."""
        response = self._send("GET", "/v1/mandates", timeout=self.request_timeout_s, retry=True)
        return [MandateStanding.from_dict(m) for m in response.json()["mandates"]]

    def coverage(
        self,
        action: str,
        payee: Optional[str],
        amount_minor: int,
        currency: str,
        *,
        tenant_id: Optional[str] = None,
    ) -> Coverage:
        """POST /v1/mandates/coverage: "am I covered?" for an intent not sent yet. A read:
        nothing is reserved, and the claim judges the stored operation again."""
        question: dict[str, Any] = {
            "action": action,
            "payee": payee,
            "amount_minor": amount_minor,
            "currency": currency,
        }
        if tenant_id is not None:
            question["tenant_id"] = tenant_id
        return self._ask_coverage(question)

    def coverage_of(self, intent: Union[Intent, Mapping[str, Any]]) -> Coverage:
        """"Am I covered?" for a whole intent (its tenant, action, payee, amount, currency)."""
        body = json.loads(intent.to_json()) if isinstance(intent, Intent) else dict(intent)
        return self._ask_coverage({"intent": body})

    def _ask_coverage(self, question: Mapping[str, Any]) -> Coverage:
        response = self._send(
            "POST",
            "/v1/mandates/coverage",
            data=json.dumps(question, ensure_ascii=False, separators=(",", ":")).encode(),
            headers={"Content-Type": "application/json"},
            timeout=self.request_timeout_s,
            retry=True,
        )
        return Coverage.from_dict(response.json())

    def _operation_path(self, operation_id: str) -> str:
        return "/v1/operations/" + quote(operation_id, safe="")

    def _send(self, method: str, path: str, *, retry: bool, **kwargs: Any) -> requests.Response:
        last: Exception | None = None
        for attempt in range(1, (self.attempts if retry else 1) + 1):
            try:
                response = self.session.request(method, self.api_url + path, **kwargs)
            except requests.RequestException as e:
                # No answer: the request may or may not have been done. Every request sent
                # here is safe to repeat (a read, or the idempotent submission).
                last = e
                time.sleep(min(attempt, 5))
                continue
            if response.status_code in (200, 202):
                return response
            try:
                body: Any = response.json()
            except ValueError:
                body = None
            error = ApiError.from_response(
                response.status_code,
                body,
                response.headers.get("Retry-After"),
                response.headers.get("X-Request-Id"),
            )
            if not (retry and error.retryable):
                raise error
            last = error
            time.sleep(error.retry_after if error.retry_after is not None else min(attempt, 5))
        if isinstance(last, ApiError):
            raise last
        raise ApiError(
            f"no answer from fleet-api after {self.attempts} attempts: {last}",
            code="unreachable",
        ) from last
