//! The intake's payee name check (`fleet_core::payee::name_check`): the result the
//! directory answered beside the payee, frozen into the evidence, and what the intent's
//! policy asks of it (`[actions."payment.create".name_check]`: one more approver, or a
//! refusal, `payee_name_unconfirmed`).

use fleet_core::payee::name_check::{asked_name, NAME_MEMBER};
use fleet_core::payee::{NameCheck, PayeeEvidence};
use fleet_core::IntakeRefusal;
use tracing::warn;

use crate::checked::{counted, CheckedIntent, IntakeRules, Refusal};

/// `evidence` with a name check for an action whose payee's name is checked: the one the
/// directory answered, else `not_possible` (a directory that checks no names, Stripe's).
pub(crate) fn checked(checked: &CheckedIntent, evidence: PayeeEvidence) -> PayeeEvidence {
    let intent = &checked.intent;
    match asked_name(intent.action, &intent.snapshot.payload) {
        Some(asked) if evidence.found().is_some() && evidence.name_check().is_none() => {
            evidence.with_name_check(NameCheck::judge(asked, None))
        }
        _ => evidence,
    }
}

/// `checked` needing what its policy asks of its name check's result, or refused.
pub(crate) fn judge_name(
    mut checked: CheckedIntent,
    rules: &IntakeRules,
    evidence: &PayeeEvidence,
) -> Result<CheckedIntent, Refusal> {
    let intent = &checked.intent;
    let rule = rules
        .policies
        .name_check(&intent.snapshot.policy_version, intent.action);
    let check = evidence.name_check();
    match rule.approvers(check, checked.approvals_required) {
        Some(approvers) => {
            checked.approvals_required = approvers;
            Ok(checked)
        }
        None => {
            let reason = IntakeRefusal::PayeeNameUnconfirmed.as_str();
            warn!(operation_id = %intent.operation_id, action = intent.action.wire_name(), reason, name_check = check.map_or("-", |c| c.result.as_str()), "intent refused: its payee's name is not the account holder's");
            Err(counted(Refusal::new(
                reason,
                Some(&format!("payload.{NAME_MEMBER}")),
            )))
        }
    }
}
