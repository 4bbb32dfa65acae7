//! What an intent's policy asks of it once its risk cues are found, whatever kind of
//! intent it is: the payment's judgement (`crate::risk`) and the charge's
//! (`crate::charge_risk`) both end here.

use fleet_core::policy::RiskRule;
use fleet_core::risk::RiskCue;
use tracing::info;

use crate::checked::CheckedIntent;

/// `checked` with the cues `found` kept, and the approvals and signatures `rule` asks of
/// it (more when anything was found, then also logged with the cues' codes: the kind of
/// intent is `what`, e.g. `payment`).
pub(crate) fn flagged(
    mut checked: CheckedIntent,
    rule: RiskRule,
    found: Vec<RiskCue>,
    what: &str,
) -> CheckedIntent {
    let (approvers, signed) = rule.requirement(
        !found.is_empty(),
        checked.approvals_required,
        checked.signatures_required,
    );
    if !found.is_empty() {
        let codes: Vec<String> = found
            .iter()
            .map(|c| {
                serde_json::to_value(c)
                    .map(|v| v["cue"].to_string())
                    .unwrap_or_default()
            })
            .collect();
        info!(operation_id = %checked.intent.operation_id, cues = %codes.join(","), approvals_required = approvers, signatures_required = signed, "{what} flagged by risk cues");
    }
    checked.approvals_required = approvers;
    checked.signatures_required = signed;
    checked.risk = Some(found);
    checked
}
