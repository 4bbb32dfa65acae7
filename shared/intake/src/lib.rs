//! fleet-intake: how an intent.v1 becomes a stored, pending-approval operation, the same
//! way at every door (the `intents.prepare` queue in fleet-prepare, the HTTP API and its
//! MCP tools in fleet-api). The contract and the capability guard, the quorum policy in
//! force for the intent's tenant and action, the payee's lookup in the provider's directory (the one external call,
//! a read, kept as evidence), the tenant's own records (objects it names, a payment's risk
//! cues), then the immutable snapshot written idempotently by operation id. Each door
//! adds only what is its own: who is speaking, and how the fate is answered.
//!
//! - [`checked`]: the rules, the checked intent, its fate and the refusal a sender is told;
//! - [`intake`](mod@intake): the order of the checks and the write;
//! - [`in_force`]: the intent is under the policy the deployment put in force;
//! - [`payee`], [`objects`], [`risk`], [`charge_risk`]: the checks against the world and the
//!   records;
//! - [`series`]: every refusal reason, and the intake's series at zero.

pub mod charge_risk;
pub mod checked;
mod flagged;
pub mod in_force;
pub mod intake;
pub mod objects;
pub mod payee;
pub mod refunded;
pub mod risk;
pub mod series;

pub use checked::{CheckedIntent, Intake, IntakeRules, Refusal};
pub use intake::{
    against_records, against_world, against_world_in_force, intake, refuse, store_intent,
    store_intent_by, validate, with_payee, write, WriteError, Written, PAYEE_UNKNOWN,
};
pub use payee::{DirectoryUnreachable, PayeeDirectory};
