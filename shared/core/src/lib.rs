//! The fleet's domain, free of I/O: intent.v1, the snapshot hash, the operation state
//! machine and provider outcome classification. Time and randomness are inputs here,
//! never read inside, so everything is testable without services.

pub mod access;
pub mod action_spec;
pub mod actions;
pub mod answer;
pub mod approval;
pub mod approval_statement;
pub mod attempt;
pub mod attempt_record;
pub mod authz;
mod by_name;
pub mod catalogue;
pub mod currency;
pub mod directory_wait;
pub mod doorbell;
pub mod events;
pub mod execute;
pub mod hash;
pub mod history;
pub mod identifier;
pub mod ids;
pub mod intent;
pub mod intent_error;
pub mod intent_limits;
pub mod json_words;
pub mod live_quorum;
pub mod lookup;
pub mod member_path;
pub mod members;
pub mod money;
pub mod objects;
pub mod outcome;
pub mod passkey;
pub mod payee;
pub mod policy;
pub mod rate;
pub mod reason;
pub mod reconcile;
pub mod refusal;
pub mod resolution;
pub mod risk;
pub mod session;
pub mod signed_quorum;
pub mod signing;
pub mod state;
pub mod step_up;
pub mod strict_json;
pub mod stripe;
pub mod stripe_events;
pub mod supersede;
pub mod throttle;
pub mod visible;
pub use answer::answer_summary;
pub mod wait_shares;
pub mod waiting;
pub mod webhook;
pub mod wording;

pub use access::{claimed_access, ClaimedAccess, Role, Token, TokenHash};
pub use action_spec::{Action, ActionSpec, Effect, ProviderName, Subject};
pub use actions::deal_create::classify_deal_create;
pub use actions::deal_update::classify_deal_update;
pub use actions::payment_create::classify_payment;
pub use approval::{judge_approval, ApprovalAsked, ApprovalStatus, ApprovalVerdict};
pub use approval_statement::{ApprovalStatement, StatementSubject};
pub use attempt::AttemptOutcome;
pub use attempt_record::AttemptRecord;
pub use authz::{Actor, ApiAction, Decider, Denial, OperationAction, OperationFacts, SignIn};
pub use catalogue::CATALOGUE;
pub use doorbell::Doorbell;
pub use hash::{canonical_json, hash_value, Snapshot};
pub use identifier::{check_identifier, is_identifier, IdentifierProblem};
pub use ids::{tenant_hash, IdempotencyKey, OpKey, OpRef, OperationId, PayloadHash};
pub use intent::{parse_intent, IntentError, ValidIntent};
pub use outcome::{CallResult, NoAnswerKind, Outcome, Precondition, ProviderAnswer};
pub use policy::{PolicyRefusal, PolicySet, Quorum};
pub use reason::Reason;
pub use refusal::IntakeRefusal;
pub use resolution::Resolution;
pub use signed_quorum::{
    check_signature, count_signed, PresentedSignature, RecordedApproval, RegisteredKey,
    SignatureRefusal, SignedCount,
};
pub use signing::{ApproverKey, KeyId, PublicKey, Signature};
pub use state::{transition, Event, Refused, Status};
pub use waiting::{wait_is_over, WaitFor, WaitOver, WaitState};
