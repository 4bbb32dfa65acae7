// Must NOT type-check: an amount given as a string. .ci/clients compiles this file alone and
// fails unless tsc refuses it, naming `amount_minor`.
import type { components } from "../src/fleet-api";

export const wrong: components["schemas"]["PaymentCreateIntent"] = {
  schema: "intent.v1",
  operation_id: "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8",
  tenant_id: "org_482",
  action: "payment.create",
  provider: "payments",
  payload: {
    invoice_id: "inv_9182",
    beneficiary_id: "vendor_77",
    amount_minor: "oops",
    currency: "KZT",
  },
  policy_version: "payments-v3",
  data_version: "inv_9182@7",
  approval_ttl_seconds: 3600,
};
