"""Must NOT type-check: an amount given as a string. .ci/clients runs mypy on this file
and fails unless mypy refuses it on the `amount_minor` line. (The generated models do not
check types when built or sent, so the type checker is where a client catches this.)"""

from fleet_api_client.models import IntentV1Currency, IntentV1PaymentCreate

wrong = IntentV1PaymentCreate(
    invoice_id="inv_9182",
    beneficiary_id="vendor_77",
    amount_minor="oops",
    currency=IntentV1Currency.KZT,
)
