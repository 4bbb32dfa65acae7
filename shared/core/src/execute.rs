//! The execute worker's rules, free of I/O: what to do with a row it was rung for
//! ([`decide`]), and where a provider's answer moves the claimed row ([`answer_move`]).
//! The worker reads the row, asks here, and has the store apply the answer.

mod answer_move;
mod decide;

pub use answer_move::{answer_move, AnswerMove};
pub use decide::{decide, policy_current, Decision, ExecuteFacts};
