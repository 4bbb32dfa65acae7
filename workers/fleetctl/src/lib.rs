//! fleetctl: the approver's and operator's command line, and the demo (the bench is
//! `fleet-bench`, which shares the process helpers here).
//! Each command is a small module; `main.rs` only parses and dispatches.

/// `println!` for what a person reads: the line with every invisible or directional
/// character written as its code point (`fleet_core::visible::reveal`), so an id or a
/// reason cannot look like another on a terminal. JSON output is printed as stored.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        println!("{}", fleet_core::visible::reveal(&format!($($arg)*)))
    };
}

pub mod api_client;
pub mod api_target;
pub mod args;
pub mod batch;
pub mod broker_setup;
pub mod cli;
pub mod completion;
pub mod config;
pub mod context;
pub mod dead_letters;
pub mod decide;
pub mod demo;
pub mod evidence;
pub mod exit;
pub mod format;
pub mod hash;
pub mod history;
pub mod inspect;
pub mod key;
pub mod mandate;
pub mod operator;
pub mod output;
pub mod policy;
pub mod principal;
pub mod principal_broker;
pub mod processes;
pub mod prune;
pub mod refusal;
pub mod secret_file;
pub mod stripe_forms;
pub mod submit;
pub mod table;
pub mod token;
pub mod wait;
