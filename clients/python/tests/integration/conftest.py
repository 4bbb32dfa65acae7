"""The fleet the integration tests run against, from the environment that
run-tests-against-local-stack.sh sets; without it the tests are skipped."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

import pytest

from fleet_client import FleetClient, Intent, OperationView, new_operation_id


@dataclass(frozen=True)
class Fleet:
    api_url: str
    token: str
    approver_token: str
    principal: str
    agent_amqp_url: str
    admin_amqp_url: str
    namespace: str
    fleetctl: str

    def approve(self, view: OperationView) -> None:
        """A person approves the hash fleet shows, with `fleetctl approve` and a token of
        their own."""
        subprocess.run(
            [self.fleetctl, "approve", view.operation_id, "--hash", view.payload_hash],
            env=dict(os.environ, FLEET_API_URL=self.api_url, FLEET_TOKEN=self.approver_token),
            check=True,
            capture_output=True,
            timeout=60,
        )


# Each field of Fleet but `namespace` and the variable it is read from; all must be set.
REQUIRED = {
    "api_url": "FLEET_API_URL",
    "token": "FLEET_TOKEN",
    "approver_token": "FLEET_APPROVER_TOKEN",
    "principal": "FLEET_PRINCIPAL",
    "agent_amqp_url": "FLEET_AGENT_AMQP_URL",
    "admin_amqp_url": "FLEET_ADMIN_AMQP_URL",
    "fleetctl": "FLEETCTL",
}


@pytest.fixture(scope="session")
def fleet() -> Fleet:
    env = os.environ
    missing = [name for name in REQUIRED.values() if not env.get(name)]
    if missing:
        pytest.skip(f"no fleet to run against ({', '.join(missing)} unset): "
                    "run clients/python/run-tests-against-local-stack.sh")
    return Fleet(
        **{field: env[name] for field, name in REQUIRED.items()},
        namespace=env.get("FLEET_AMQP_NAMESPACE", ""),
    )


@pytest.fixture
def client(fleet: Fleet):
    with FleetClient(fleet.api_url, fleet.token) as c:
        yield c


def seed_payment(**changes: object) -> Intent:
    """The seed payment (12,500.00 KZT to vendor_77 for invoice inv_9182) with a fresh id."""
    fields: dict[str, object] = dict(
        operation_id=new_operation_id(),
        tenant_id="org_482",
        action="payment.create",
        provider="payments",
        payload={"invoice_id": "inv_9182", "beneficiary_id": "vendor_77",
                 "amount_minor": 1250000, "currency": "KZT"},
        policy_version="payments-v3",
        data_version="inv_9182@7",
        approval_ttl_seconds=3600,
        rationale="Invoice is due today and matches PO 5531.",
    )
    fields.update(changes)
    return Intent(**fields)  # type: ignore[arg-type]
