//! The intake's check that the provider objects an intent names are its tenant's
//! (`fleet_core::objects`): an object the fleet recorded for another tenant is refused
//! (`object_of_other_tenant`), one it has no record of is what the intent's policy says
//! (refused `object_unknown`, or more approvers). Run by both doors, after the contract
//! and before anything is written; the records are read by `Store::object_tenants`.

use fleet_core::objects::{ownership, Ownership, OBJECT_OF_OTHER_TENANT, OBJECT_UNKNOWN};
use fleet_store::component::StoreIntents;
use fleet_store::{StoreAs, StoreError};
use tracing::{info, warn};

use crate::checked::{counted, CheckedIntent, IntakeRules, Refusal};

/// `checked` with its quorum raised as its policy asks for objects the fleet has no record
/// of; a refusal for an object of another tenant, or one its policy refuses. Postgres
/// failing is the outer error: nothing was decided.
pub async fn with_objects<R: StoreIntents>(
    mut checked: CheckedIntent,
    rules: &IntakeRules,
    store: &StoreAs<R>,
) -> Result<Result<CheckedIntent, Refusal>, StoreError> {
    let intent = &checked.intent;
    let spec = intent.action.spec();
    let tenant = intent.snapshot.tenant_id.as_str();
    let target = intent.snapshot.target.as_deref();
    for object in spec.objects {
        let Some(id) = object.id(target, &intent.snapshot.payload) else {
            continue;
        };
        let recorded = store
            .object_tenants(spec.provider.as_str(), id, &object.recorded_by_names())
            .await?;
        let field = object.field_name();
        match ownership(tenant, &recorded) {
            Ownership::Own => {}
            Ownership::OtherTenant => {
                // Only the field is logged: the id is another tenant's.
                warn!(operation_id = %intent.operation_id, action = spec.wire_name, field, reason = OBJECT_OF_OTHER_TENANT, "intent refused: it names another tenant's object");
                return Ok(Err(counted(Refusal::new(
                    OBJECT_OF_OTHER_TENANT,
                    Some(&field),
                ))));
            }
            Ownership::Unrecorded => {
                let rule = match rules
                    .policies
                    .foreign_object(&intent.snapshot.policy_version, intent.action)
                {
                    Ok(rule) => rule,
                    Err(r) => return Ok(Err(counted(Refusal::new(r.reason(), Some(r.field()))))),
                };
                match rule.approvers(checked.approvals_required) {
                    Some(approvers) => {
                        info!(operation_id = %intent.operation_id, field, approvals_required = approvers, "names an object the fleet has no record of");
                        checked.approvals_required = approvers;
                    }
                    None => {
                        warn!(operation_id = %intent.operation_id, action = spec.wire_name, field, reason = OBJECT_UNKNOWN, "intent refused: it names an object the fleet has no record of");
                        return Ok(Err(counted(Refusal::new(OBJECT_UNKNOWN, Some(&field)))));
                    }
                }
            }
        }
    }
    Ok(Ok(checked))
}
