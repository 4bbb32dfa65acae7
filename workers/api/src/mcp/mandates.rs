//! `list_mandates` and `mandate_coverage`: what an agent may know of the standing
//! mandates that apply to it, through the HTTP routes' own functions
//! (`crate::mandate_coverage`). An agent sees them and asks whether it is covered; no
//! tool makes, widens or revokes a mandate (the HTTP routes that do refuse an agent's
//! token, and the database refuses every component role a write).

use rmcp::model::CallToolResult;
use serde_json::{Map, Value};

use super::answers::{answer, refusal};
use super::read::read_args;
use crate::auth::Caller;
use crate::mandate_coverage::{judge, list, CoverageQuestion};
use crate::state::AppState;

/// `list_mandates`: takes no arguments.
pub async fn list_mandates(
    state: &AppState,
    caller: &Caller,
    arguments: Map<String, Value>,
) -> CallToolResult {
    if let Err(refused) = read_args::<NoArguments>(caller, arguments) {
        return refused;
    }
    match list(state, &caller.0).await {
        Ok(v) => answer(v, None),
        Err(e) => refusal(&e),
    }
}

/// `mandate_coverage`.
pub async fn mandate_coverage(
    state: &AppState,
    caller: &Caller,
    arguments: Map<String, Value>,
) -> CallToolResult {
    let q = match read_args::<CoverageQuestion>(caller, arguments) {
        Ok(q) => q,
        Err(refused) => return refused,
    };
    match judge(state, &caller.0, &q).await {
        Ok(v) => {
            let note = note(&v);
            answer(v, Some(note))
        }
        Err(e) => refusal(&e),
    }
}

/// The arguments of a tool that takes none.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

/// One sentence for the model: a "yes" is no approval yet, a "no" is no refusal.
fn note(v: &Value) -> String {
    if v["covered"] == Value::Bool(true) {
        format!(
            "Covered by mandate {}: once proposed, it is approved at execution without a person, \
             if intake finds no risk cue and the payee's account is the one signed.",
            v["mandate_id"].as_str().unwrap_or_default()
        )
    } else {
        format!(
            "Not covered ({}): propose it anyway and a person approves it.",
            v["reason"].as_str().unwrap_or_default()
        )
    }
}
