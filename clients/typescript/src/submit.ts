// Submits one intent of each action named on the command line (every action when none is
// named) to a real fleet-api with openapi-fetch, typed by the types generated from its
// OpenAPI document: each intent is built as its action's own type, and each answer is read
// as the operation's view. Exits non-zero unless every intent was stored (202, or 200 for
// one stored before).
//
//   FLEET_API_URL=http://127.0.0.1:8080 FLEET_TOKEN=fleet_… node out/submit.js [action…]
//
// A charge names the Stripe customer and saved payment method in FLEET_CHARGE_CUSTOMER and
// FLEET_CHARGE_PAYMENT_METHOD (charges are served where payments are spoken as Stripe).
import createClient from "openapi-fetch";
import type { components, paths } from "./fleet-api";

declare const process: {
  env: Record<string, string | undefined>;
  argv: string[];
  exitCode?: number;
};

type Intent = components["schemas"]["IntentV1"];
type Action = Intent["action"];
type IntentOf<A extends Action> = Extract<Intent, { action: A }>;

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** A fresh operation id: `op_` and a ULID (48 bits of milliseconds, 80 random bits). */
function operationId(): string {
  let time = Date.now();
  let text = "";
  for (let i = 0; i < 10; i++) {
    text = CROCKFORD[time % 32] + text;
    time = Math.floor(time / 32);
  }
  const random = crypto.getRandomValues(new Uint8Array(16));
  for (const byte of random) text += CROCKFORD[byte % 32];
  return `op_${text}`;
}

const common = {
  schema: "intent.v1",
  tenant_id: "org_482",
  approval_ttl_seconds: 1800,
  rationale: "Submitted by the typed TypeScript client.",
} as const;

// One builder per action: the mapped type makes a new action in the document a type error
// here until it has one.
const build: { [A in Action]: () => IntentOf<A> } = {
  "payment.create": () => ({
    ...common,
    operation_id: operationId(),
    action: "payment.create",
    provider: "payments",
    target: null,
    payload: { invoice_id: "inv_9182", beneficiary_id: "vendor_77", amount_minor: 1250000, currency: "KZT" },
    policy_version: "payments-v3",
    data_version: "inv_9182@7",
  }),
  "refund.create": () => ({
    ...common,
    operation_id: operationId(),
    action: "refund.create",
    provider: "payments",
    payload: { payment_id: "pay_ts_1", amount_minor: 5000, currency: "KZT", reason: "duplicate invoice" },
    policy_version: "refunds-v1",
    data_version: "pay_ts_1@1",
  }),
  "crm.deal.create": () => ({
    ...common,
    operation_id: operationId(),
    action: "crm.deal.create",
    provider: "crm",
    payload: { name: "Acme renewal", amount_minor: 990000, currency: "EUR", stage: "proposal", owner_id: "u_7" },
    policy_version: "crm-v1",
    data_version: "acct_9@3",
  }),
  "crm.deal.update": () => ({
    ...common,
    operation_id: operationId(),
    action: "crm.deal.update",
    provider: "crm",
    target: "deal_ts_1",
    payload: { expected_version: 3, patch: { stage: "won", probability: 0.9 } },
    policy_version: "crm-v1",
    data_version: "deal_ts_1@3",
  }),
  "order.status.change": () => ({
    ...common,
    operation_id: operationId(),
    action: "order.status.change",
    provider: "orders",
    target: "ord_ts_1",
    payload: { from: "paid", to: "fulfilled", reason: "Shipped by carrier" },
    policy_version: "orders-v1",
    data_version: "ord_ts_1@paid",
  }),
  "contract.send": () => ({
    ...common,
    operation_id: operationId(),
    action: "contract.send",
    provider: "esign",
    payload: {
      template_id: "tpl_msa_v3",
      recipient_id: "cust_42",
      document_sha256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
      subject: "Master services agreement",
    },
    policy_version: "contracts-v1",
    data_version: "cust_42@12",
  }),
  "charge.create": () => ({
    ...common,
    operation_id: operationId(),
    action: "charge.create",
    provider: "payments",
    payload: {
      invoice_id: "inv_1042",
      customer: process.env.FLEET_CHARGE_CUSTOMER ?? "cus_unset",
      payment_method: process.env.FLEET_CHARGE_PAYMENT_METHOD ?? "pm_unset",
      amount_minor: 5000,
      currency: "KZT",
    },
    policy_version: "charges-v1",
    data_version: "inv_1042@1",
  }),
};

function isAction(name: string): name is Action {
  return Object.prototype.hasOwnProperty.call(build, name);
}

async function main(): Promise<void> {
  const baseUrl = process.env.FLEET_API_URL;
  const token = process.env.FLEET_TOKEN;
  if (!baseUrl || !token) throw new Error("FLEET_API_URL and FLEET_TOKEN are required");
  const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });
  const asked = process.argv.slice(2);
  const unknown = asked.filter((name) => !isAction(name));
  if (unknown.length) throw new Error(`no such action: ${unknown.join(" ")}`);
  const actions: Action[] = asked.length ? asked.filter(isAction) : (Object.keys(build) as Action[]);
  for (const action of actions) {
    const intent: Intent = build[action]();
    const { data, error, response } = await client.POST("/v1/intents", { body: intent });
    if (!data) {
      throw new Error(`${action}: ${response.status} ${JSON.stringify(error)}`);
    }
    // The answer is typed as the operation's view.
    if (data.operation_id !== intent.operation_id || data.action !== action) {
      throw new Error(`${action}: the answer is another operation's: ${JSON.stringify(data)}`);
    }
    console.log(`typescript: ${action} ${data.operation_id} ${response.status} ${data.approval_status}`);
  }
}

main().catch((e: unknown) => {
  console.error(`typescript: ${e instanceof Error ? e.message : String(e)}`);
  process.exitCode = 1;
});
