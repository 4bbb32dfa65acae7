"""Mandates as an agent sees them, against a real fleet: the list of its mandates, "am I
covered?" answered with a reason, a question the API cannot read naming its member, and
the agent's token refused the power to make a mandate."""

from __future__ import annotations

import json

import pytest

from fleet_client import ApiError, Coverage, FleetClient

from .conftest import Fleet, seed_payment


def test_an_agent_lists_its_mandates_and_asks_whether_it_is_covered(client: FleetClient) -> None:
    mandates = client.mandates()
    assert isinstance(mandates, list)
    answer = client.coverage("payment.create", "vendor_77", 1250000, "KZT")
    assert isinstance(answer, Coverage)
    assert (answer.covered, answer.tenant_id, answer.action) == (False, "org_482", "payment.create")
    # No mandate of this tenant was made for this agent, whatever else the fleet holds.
    if not any(m.status == "active" for m in mandates):
        assert answer.reason == "no_active_mandate"
    assert answer.reason is not None
    whole = client.coverage_of(seed_payment())
    assert (whole.covered, whole.action) == (False, "payment.create")


def test_a_question_the_api_cannot_read_names_its_member(client: FleetClient) -> None:
    with pytest.raises(ApiError) as refused:
        client.coverage("payment.create", "vendor_77", 0, "KZT")
    assert (refused.value.code, refused.value.field) == ("invalid_field", "amount_minor")
    with pytest.raises(ApiError) as refused:
        client.coverage("payment.create", "vendor_77", 100, "kzt")
    assert refused.value.field == "currency"


def test_an_agents_token_cannot_make_a_mandate(fleet: Fleet) -> None:
    with FleetClient(fleet.api_url, fleet.token) as c:
        response = c.session.post(
            fleet.api_url + "/v1/mandates",
            data=json.dumps({"statement": {}, "key_id": "ed25519:" + "0" * 32, "signature": "AA"}),
            headers={"Content-Type": "application/json"},
            timeout=30,
        )
    assert response.status_code == 403
    assert response.json()["code"] == "role_not_allowed"
