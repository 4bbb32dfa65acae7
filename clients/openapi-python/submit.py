"""Submits one intent of each action named on the command line (every action when none is
named) to a real fleet-api with the client openapi-python-client generated from its OpenAPI
document (the package `fleet_api_client`, on PYTHONPATH): each intent is built as its
action's own model, and each answer is read as the operation's view. Exits non-zero unless
every intent was stored (202, or 200 for one stored before). `mypy --strict` checks it.

    FLEET_API_URL=http://127.0.0.1:8080 FLEET_TOKEN=fleet_… python submit.py [action…]

A charge names the Stripe customer and saved payment method in FLEET_CHARGE_CUSTOMER and
FLEET_CHARGE_PAYMENT_METHOD (charges are served where payments are spoken as Stripe).
"""

import os
import secrets
import sys
import time
from typing import Callable

from fleet_api_client import AuthenticatedClient
from fleet_api_client.api.intents import submit_intent
from fleet_api_client.models import (
    ChargeCreateIntent,
    ContractSendIntent,
    CrmDealCreateIntent,
    CrmDealUpdateIntent,
    IntentV1ChargeCreate,
    IntentV1ContractSend,
    IntentV1Currency,
    IntentV1DealCreate,
    IntentV1DealUpdate,
    IntentV1DealUpdatePatch,
    IntentV1OrderStatusChange,
    IntentV1PaymentCreate,
    IntentV1RefundCreate,
    OperationView,
    OrderStatusChangeIntent,
    PaymentCreateIntent,
    RefundCreateIntent,
)

Intent = (
    PaymentCreateIntent
    | RefundCreateIntent
    | CrmDealCreateIntent
    | CrmDealUpdateIntent
    | OrderStatusChangeIntent
    | ContractSendIntent
    | ChargeCreateIntent
)

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
TENANT = "org_482"
TTL = 1800
WHY = "Submitted by the typed Python client."


def operation_id() -> str:
    """A fresh operation id: `op_` and a ULID (48 bits of milliseconds, 80 random bits)."""
    value = (int(time.time() * 1000) << 80) | secrets.randbits(80)
    text = "".join(CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))
    return f"op_{text}"


def payment() -> Intent:
    return PaymentCreateIntent(
        schema="intent.v1", operation_id=operation_id(), tenant_id=TENANT,
        action="payment.create", provider="payments",
        payload=IntentV1PaymentCreate(
            invoice_id="inv_9182", beneficiary_id="vendor_77",
            amount_minor=1_250_000, currency=IntentV1Currency.KZT,
        ),
        policy_version="payments-v3", data_version="inv_9182@7",
        approval_ttl_seconds=TTL, rationale=WHY,
    )


def refund() -> Intent:
    return RefundCreateIntent(
        schema="intent.v1", operation_id=operation_id(), tenant_id=TENANT,
        action="refund.create", provider="payments",
        payload=IntentV1RefundCreate(
            payment_id="pay_py_1", amount_minor=5000,
            currency=IntentV1Currency.KZT, reason="duplicate invoice",
        ),
        policy_version="refunds-v1", data_version="pay_py_1@1",
        approval_ttl_seconds=TTL, rationale=WHY,
    )


def deal_create() -> Intent:
    return CrmDealCreateIntent(
        schema="intent.v1", operation_id=operation_id(), tenant_id=TENANT,
        action="crm.deal.create", provider="crm",
        payload=IntentV1DealCreate(
            name="Acme renewal", amount_minor=990_000, currency=IntentV1Currency.EUR,
            stage="proposal", owner_id="u_7",
        ),
        policy_version="crm-v1", data_version="acct_9@3",
        approval_ttl_seconds=TTL, rationale=WHY,
    )


def deal_update() -> Intent:
    patch = IntentV1DealUpdatePatch()
    patch.additional_properties = {"stage": "won", "probability": 0.9}
    return CrmDealUpdateIntent(
        schema="intent.v1", operation_id=operation_id(), tenant_id=TENANT,
        action="crm.deal.update", provider="crm", target="deal_py_1",
        payload=IntentV1DealUpdate(expected_version=3, patch=patch),
        policy_version="crm-v1", data_version="deal_py_1@3",
        approval_ttl_seconds=TTL, rationale=WHY,
    )


def order_change() -> Intent:
    return OrderStatusChangeIntent(
        schema="intent.v1", operation_id=operation_id(), tenant_id=TENANT,
        action="order.status.change", provider="orders", target="ord_py_1",
        payload=IntentV1OrderStatusChange(
            from_="paid", to="fulfilled", reason="Shipped by carrier",
        ),
        policy_version="orders-v1", data_version="ord_py_1@paid",
        approval_ttl_seconds=TTL, rationale=WHY,
    )


def contract() -> Intent:
    return ContractSendIntent(
        schema="intent.v1", operation_id=operation_id(), tenant_id=TENANT,
        action="contract.send", provider="esign",
        payload=IntentV1ContractSend(
            template_id="tpl_msa_v3", recipient_id="cust_42",
            document_sha256="9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            subject="Master services agreement",
        ),
        policy_version="contracts-v1", data_version="cust_42@12",
        approval_ttl_seconds=TTL, rationale=WHY,
    )


def charge() -> Intent:
    return ChargeCreateIntent(
        schema="intent.v1", operation_id=operation_id(), tenant_id=TENANT,
        action="charge.create", provider="payments",
        payload=IntentV1ChargeCreate(
            invoice_id="inv_1042",
            customer=os.environ.get("FLEET_CHARGE_CUSTOMER", "cus_unset"),
            payment_method=os.environ.get("FLEET_CHARGE_PAYMENT_METHOD", "pm_unset"),
            amount_minor=5000, currency=IntentV1Currency.KZT,
        ),
        policy_version="charges-v1", data_version="inv_1042@1",
        approval_ttl_seconds=TTL, rationale=WHY,
    )


BUILD: dict[str, Callable[[], Intent]] = {
    "payment.create": payment,
    "refund.create": refund,
    "crm.deal.create": deal_create,
    "crm.deal.update": deal_update,
    "order.status.change": order_change,
    "contract.send": contract,
    "charge.create": charge,
}


def main(asked: list[str]) -> int:
    unknown = [name for name in asked if name not in BUILD]
    if unknown:
        print(f"python: no such action: {' '.join(unknown)}", file=sys.stderr)
        return 1
    client = AuthenticatedClient(
        base_url=os.environ["FLEET_API_URL"], token=os.environ["FLEET_TOKEN"]
    )
    with client:
        for action in asked or list(BUILD):
            intent = BUILD[action]()
            answer = submit_intent.sync_detailed(client=client, body=intent)
            view = answer.parsed
            if answer.status_code not in (200, 202) or not isinstance(view, OperationView):
                print(f"python: {action}: {answer.status_code} {answer.content!r}", file=sys.stderr)
                return 1
            if view.operation_id != intent.operation_id or view.action != action:
                print(f"python: {action}: the answer is another operation's", file=sys.stderr)
                return 1
            print(f"python: {action} {view.operation_id} {answer.status_code} {view.approval_status}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
