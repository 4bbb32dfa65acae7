"""What an agent may know of the standing mandates that apply to it (docs/mandates.md):
the mandates made for it with what is left of them, and "am I covered?" for an intent it
has not sent yet. Read-only by design: making, widening or revoking a mandate is a
person's signed act, which no agent token may do."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional


@dataclass(frozen=True)
class MandateStanding:
    """One mandate as `GET /v1/mandates` shows it."""

    mandate_id: str
    tenant_id: str
    status: str
    currency: str
    budget_minor: int
    available_minor: int
    used_count: int
    count_limit: int
    statement: Mapping[str, Any]

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> MandateStanding:
        return MandateStanding(
            mandate_id=str(d["mandate_id"]),
            tenant_id=str(d["tenant_id"]),
            status=str(d["status"]),
            currency=str(d["currency"]),
            budget_minor=int(d["budget_minor"]),
            available_minor=int(d["available_minor"]),
            used_count=int(d["used_count"]),
            count_limit=int(d["count_limit"]),
            statement=dict(d["statement"]),
        )


@dataclass(frozen=True)
class Coverage:
    """The answer of `POST /v1/mandates/coverage`.

    `covered`: a mandate (`mandate_id`) would approve the intent at execution without a
    person, leaving `available_after_minor` and `count_left_after`, on `conditions` that
    intake judges (the payee's account, risk cues). Otherwise `reason` says why not
    (`no_active_mandate`, `above_per_operation_max`, `payee_not_allowed`,
    `over_remaining_budget`, `policy_band_needs_a_person`, ...): the intent may still be
    proposed, and a person approves it. Nothing is reserved by asking.
    """

    covered: bool
    tenant_id: str
    action: str
    mandate_id: Optional[str] = None
    reason: Optional[str] = None
    available_after_minor: Optional[int] = None
    count_left_after: Optional[int] = None
    from_amount_minor: Optional[int] = None
    conditions: tuple[str, ...] = field(default_factory=tuple)

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> Coverage:
        def opt_int(name: str) -> Optional[int]:
            v = d.get(name)
            return None if v is None else int(v)

        mandate = d.get("mandate_id")
        reason = d.get("reason")
        return Coverage(
            covered=bool(d["covered"]),
            tenant_id=str(d["tenant_id"]),
            action=str(d["action"]),
            mandate_id=None if mandate is None else str(mandate),
            reason=None if reason is None else str(reason),
            available_after_minor=opt_int("available_after_minor"),
            count_left_after=opt_int("count_left_after"),
            from_amount_minor=opt_int("from_amount_minor"),
            conditions=tuple(str(c) for c in d.get("conditions") or ()),
        )
