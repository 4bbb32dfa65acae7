//! The intake's check that an intent is under the policy the deployment put in force for
//! its tenant and action (`fleet_store`'s `policy_in_force`: the tenant's assignment, else
//! the default). The agent's `policy_version` only confirms it: naming another is refused
//! (`policy_not_in_force`), never obeyed. Judged by both doors first among the checks
//! against the world, so nothing is looked up for an intent that will be refused (the queue
//! door reads the version with its submitter, in one statement); the database checks the
//! same again when the operation is inserted.

use fleet_core::PolicyRefusal;
use tracing::warn;

use crate::checked::{counted, CheckedIntent, Refusal};

/// `checked` if its policy is `version`, the one in force for its tenant and action (read
/// by the door, `None`: none is); else its refusal.
pub fn judge(checked: CheckedIntent, version: Option<&str>) -> Result<CheckedIntent, Refusal> {
    let intent = &checked.intent;
    let named = intent.snapshot.policy_version.as_str();
    let refusal = match version {
        Some(version) if version == named => return Ok(checked),
        Some(version) => {
            warn!(operation_id = %intent.operation_id, action = intent.action.wire_name(), policy_version = named, in_force = %version, reason = PolicyRefusal::NotInForce.reason(), "intent refused: it names a policy other than the one in force for its tenant and action");
            PolicyRefusal::NotInForce
        }
        None => {
            warn!(operation_id = %intent.operation_id, action = intent.action.wire_name(), reason = PolicyRefusal::UnknownPolicy.reason(), "intent refused: no policy is in force for its action (fleetctl policy assign)");
            PolicyRefusal::ActionNotInPolicy
        }
    };
    Err(counted(Refusal::new(
        refusal.reason(),
        Some(refusal.field()),
    )))
}
