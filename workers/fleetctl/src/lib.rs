//! fleetctl: the approver's and operator's command line, the demo and the bench.
//! Each command is a small module; `main.rs` only parses and dispatches.

pub mod approval;
pub mod bench;
pub mod cli;
pub mod demo;
pub mod hash;
pub mod inspect;
pub mod operator;
pub mod principal;
pub mod processes;
pub mod submit;
pub mod token;

pub use approval::{approve_and_ring, ApproveError};
