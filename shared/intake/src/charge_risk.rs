//! The intake's judgement of a charge's risk cues (`fleet_core::risk::charge`): a card
//! never charged in the tenant, an amount far above what the customer is usually charged,
//! over the aggregates of the tenant's succeeded charges (read by primary key), and what
//! the charge's policy asks of a flagged one (its risk table, as for a payment). The cues
//! are kept with the operation (`operations.risk`), shown beside the amount and carried
//! in its events.

use fleet_core::payee::PayeeEvidence;
use fleet_core::risk::{amount_and_texts, charge_cues};
use fleet_store::component::StoreIntents;
use fleet_store::{StoreAs, StoreError};

use crate::checked::{CheckedIntent, IntakeRules};
use crate::flagged::flagged;

/// `checked` (a `charge.create`) with its risk cues, and its quorum raised as its policy
/// asks when flagged.
pub async fn with_charge_risk<R: StoreIntents>(
    checked: CheckedIntent,
    rules: &IntakeRules,
    store: &StoreAs<R>,
) -> Result<CheckedIntent, StoreError> {
    let intent = &checked.intent;
    let payload = &intent.snapshot.payload;
    let Some((amount_minor, [customer, currency])) =
        amount_and_texts(payload, ["customer", "currency"])
    else {
        return Ok(checked);
    };
    // The card as Stripe described it at intake (the payer evidence): only a card found
    // has a fingerprint to have been charged before.
    let fingerprint = match &checked.payee {
        Some(PayeeEvidence::Found { payee, .. }) => Some(payee.account.fingerprint.as_str()),
        _ => None,
    };
    let charged = store
        .charged_before(&intent.snapshot.tenant_id, fingerprint, customer, currency)
        .await?;
    let rule = rules
        .policies
        .risk(&intent.snapshot.policy_version, intent.action);
    let found = charge_cues(amount_minor, fingerprint, &charged, rule.median_multiple);
    Ok(flagged(checked, rule, found, "charge"))
}
