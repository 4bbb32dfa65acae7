//! fleetctl: the approver's and operator's command line, the demo and the bench.
//! Each command is a small module; `main.rs` only parses and dispatches.

pub mod bench;
pub mod broker_setup;
pub mod cli;
pub mod decide;
pub mod demo;
pub mod format;
pub mod hash;
pub mod inspect;
pub mod key;
pub mod operator;
pub mod principal;
pub mod processes;
pub mod submit;
pub mod token;
