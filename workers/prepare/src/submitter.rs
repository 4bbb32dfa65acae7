//! Who submitted an intent that came through the queue. The broker vouches for the
//! publishing user (the message's `user_id`, see `fleet_broker::SENDER_HEADER`); the
//! fleet's records say which agent principal speaks as that user
//! (`fleetctl principal add … --broker`). The intent is then judged as the API judges an
//! authenticated caller, by the same rule (`fleet_core::authz::may_submit`), and stored
//! with its `submitted_by`, so maker-checker and "only the submitter may supersede" hold
//! on this door too.

use fleet_core::authz::{may_submit, Denial};
use fleet_store::Principal;
use tracing::warn;

use fleet_intake::checked::{counted, CheckedIntent, Refusal};

/// The refusal of an intent whose sender no principal speaks as.
pub const UNKNOWN_SUBMITTER: &str = "unknown_submitter";

/// Whether the queue door takes intents from senders it cannot name: a message without
/// `user_id`, or from a broker user no principal speaks as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum AnonymousIntents {
    /// Dead-letter them `unknown_submitter` (production).
    #[default]
    Refuse,
    /// Store them with no submitter (development: agents publishing as a shared user).
    Allow,
}

/// The principal that submitted `checked`, judged from `principal`, the live principal
/// that speaks as its `sender` as the door read it (`None` for no sender, or one no
/// principal speaks as): `None` is an anonymous intent the door takes; `Err` its refusal
/// (unknown sender, wrong role, tenant not granted).
pub fn submitter(
    principal: Option<Principal>,
    sender: Option<&str>,
    checked: &CheckedIntent,
    anonymous: AnonymousIntents,
) -> Result<Option<Principal>, Refusal> {
    let intent = &checked.intent;
    let Some(principal) = principal else {
        if anonymous == AnonymousIntents::Allow {
            return Ok(None);
        }
        // The broker user is an account name, not a secret; it tells an operator whom to map.
        warn!(operation_id = %intent.operation_id, sender, reason = UNKNOWN_SUBMITTER, "intent refused: no principal speaks as its sender");
        return Err(counted(Refusal::new(UNKNOWN_SUBMITTER, None)));
    };
    if let Err(denial) = may_submit(&principal.actor(), &intent.snapshot.tenant_id) {
        warn!(operation_id = %intent.operation_id, principal = %principal.name, reason = denial.code(), "intent refused");
        let field = matches!(denial, Denial::TenantNotGranted).then_some("tenant_id");
        return Err(counted(Refusal::new(denial.code(), field)));
    }
    Ok(Some(principal))
}
