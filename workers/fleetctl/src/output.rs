//! How a command's result reaches stdout. For people: lines of text. With `-o json` (or
//! `--json`): one JSON document on one line and nothing else on stdout, so a script can
//! parse stdout whole; the notes a person would read go to stderr instead.

use serde_json::Value;

use crate::args::Format;

/// Prints `value` as the command's one JSON document.
pub fn json(value: &Value) {
    println!("{value}");
}

/// The result: `value()` as JSON, or `text` for people (through `say!`, every invisible
/// character shown). `value` is only built when it is printed.
pub fn result(format: Format, value: impl FnOnce() -> Value, text: impl FnOnce() -> String) {
    match format {
        Format::Json => json(&value()),
        Format::Table => crate::say!("{}", text()),
    }
}

/// A line for the person at the terminal that is not the result: on stdout for people,
/// on stderr with `-o json` (stdout then holds the JSON alone).
pub fn note(format: Format, text: &str) {
    match format {
        Format::Json => eprintln!("{}", fleet_core::visible::reveal(text)),
        Format::Table => crate::say!("{text}"),
    }
}
