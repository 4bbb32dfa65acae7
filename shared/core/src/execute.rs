//! The execute worker's rules, free of I/O: what to do with a row it was rung for
//! ([`decide`]), what a search before a create the provider cannot deduplicate lets a
//! claim do ([`before_create`]), whether a claimed attempt may call its provider
//! ([`gate`]), and where a provider's answer moves the claimed row
//! ([`answer_move`]). The worker reads the row, asks here, and has the store apply the
//! answer.

mod answer_move;
mod before_create;
mod decide;
mod gate;

pub use answer_move::{answer_move, AnswerMove};
pub use before_create::{before_create, queued_create_not_found, BeforeCreate, SearchedAnswer};
pub use decide::{decide, policy_current, Decision, ExecuteFacts};
pub use gate::{gate, AtCall, Gate, Payer, PreCallFacts};
