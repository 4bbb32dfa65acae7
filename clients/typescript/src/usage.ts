// A typed use of the generated types: an intent as the schema states it, the answers of
// the routes, and a problem read by its code. `tsc --noEmit` fails when the document no
// longer describes what this code relies on.
import type { components, paths } from "./fleet-api";

type Intent = components["schemas"]["IntentV1"];
type PaymentIntent = components["schemas"]["PaymentCreateIntent"];
type PaymentPayload = components["schemas"]["IntentV1_payment_create"];
type View = components["schemas"]["OperationView"];
type Problem = components["schemas"]["Problem"];
type ErrorCode = components["schemas"]["ErrorCode"];
type Submitted =
  paths["/v1/intents"]["post"]["responses"]["202"]["content"]["application/json"];
type Refused =
  paths["/v1/intents"]["post"]["responses"]["422"]["content"]["application/problem+json"];

const payment: PaymentPayload = {
  invoice_id: "inv_9182",
  beneficiary_id: "vendor_77",
  amount_minor: 1250000,
  currency: "KZT",
};

export const intent: PaymentIntent = {
  schema: "intent.v1",
  operation_id: "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8",
  tenant_id: "org_482",
  action: "payment.create",
  provider: "payments",
  target: null,
  payload: payment,
  policy_version: "payments-v3",
  data_version: "inv_9182@7",
  approval_ttl_seconds: 3600,
};

/** What an approver is asked, read from the intent: `action` tells its payload's type. */
export function summary(proposed: Intent): string {
  switch (proposed.action) {
    case "payment.create":
    case "charge.create":
      return `${proposed.payload.amount_minor} ${proposed.payload.currency} for ${proposed.payload.invoice_id}`;
    case "refund.create":
      return `refund ${proposed.payload.amount_minor} ${proposed.payload.currency} of ${proposed.payload.payment_id}`;
    case "crm.deal.create":
      return `deal ${proposed.payload.name} at ${proposed.payload.stage}`;
    case "crm.deal.update":
      return `deal ${proposed.target} from version ${proposed.payload.expected_version}`;
    case "order.status.change":
      return `order ${proposed.target}: ${proposed.payload.from} to ${proposed.payload.to}`;
    case "contract.send":
      return `contract ${proposed.payload.template_id} to ${proposed.payload.recipient_id}`;
  }
}

const retryable: ReadonlyArray<ErrorCode> = ["busy", "unavailable", "rate_limited", "too_many_waiters"];

/** What an agent does with a refusal: fix the member named, or retry later. */
export function advice(problem: Refused | Problem): string {
  if (retryable.includes(problem.code)) {
    return `retry later (request ${problem.request_id ?? "unknown"})`;
  }
  if (problem.code === "invalid_field" && problem.field) {
    return `fix ${problem.field}: ${problem.detail} (see ${problem.type})`;
  }
  return `${problem.title} (${problem.status})`;
}

export function settled(view: Submitted | View): boolean {
  return ["succeeded", "failed", "cancelled", "disputed"].includes(view.status);
}
