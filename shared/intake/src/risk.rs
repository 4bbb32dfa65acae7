//! The intake's judgement of a payment's risk cues (`fleet_core::risk`) over what the
//! tenant's own succeeded payments say about the payee and its account (aggregates read
//! by primary key) and the latest other payments to the payee for the same invoice or
//! amount (a possible duplicate), all read in one statement,
//! and what its policy asks of a flagged one (one more approver,
//! a signed approval: `fleet_core::policy::RiskRule`). The cues are kept with the
//! operation (`operations.risk`), shown beside the amount and carried in its events.

use fleet_core::payee::PayeeEvidence;
use fleet_core::risk::{
    amount_and_texts, cues, possible_duplicate, PayeeNow, PaymentAsked, DUPLICATE_WINDOW,
};
use fleet_core::Action;
use fleet_store::component::StoreIntents;
use fleet_store::{StoreAs, StoreError};

use crate::checked::{CheckedIntent, IntakeRules};
use crate::flagged::flagged;

/// `checked` with its risk cues, and its quorum raised as its policy asks when flagged
/// (a charge's: `crate::charge_risk`). An intent that is neither is returned as it came.
pub async fn with_risk<R: StoreIntents>(
    checked: CheckedIntent,
    rules: &IntakeRules,
    store: &StoreAs<R>,
) -> Result<CheckedIntent, StoreError> {
    let intent = &checked.intent;
    if intent.action == Action::ChargeCreate {
        return crate::charge_risk::with_charge_risk(checked, rules, store).await;
    }
    if intent.action != Action::PaymentCreate {
        return Ok(checked);
    }
    let payload = &intent.snapshot.payload;
    let members = ["beneficiary_id", "invoice_id", "currency"];
    let Some((amount_minor, [beneficiary_id, invoice_id, currency])) =
        amount_and_texts(payload, members)
    else {
        return Ok(checked);
    };
    let payee = match &checked.payee {
        Some(PayeeEvidence::Found { payee, .. }) => PayeeNow {
            known: true,
            verified: Some(payee.verified),
            account_fingerprint: Some(payee.account.fingerprint.clone()),
        },
        Some(PayeeEvidence::Unknown { .. }) => PayeeNow::default(),
        // A provider without a directory says nothing about the payee.
        None => PayeeNow {
            known: true,
            ..PayeeNow::default()
        },
    };
    let asked = PaymentAsked {
        operation_id: intent.operation_id.as_str(),
        supersedes: intent.supersedes.as_ref().map(|s| s.as_str()),
        beneficiary_id,
        invoice_id,
        amount_minor,
        currency,
    };
    let now = chrono::Utc::now();
    let (paid, recent) = store
        .payment_risk(
            &intent.snapshot.tenant_id,
            asked,
            payee.account_fingerprint.as_deref(),
            now - DUPLICATE_WINDOW,
        )
        .await?;
    let rule = rules
        .policies
        .risk(&intent.snapshot.policy_version, intent.action);
    let mut found = cues(asked, &payee, &paid, rule.median_multiple);
    found.extend(possible_duplicate(asked, &recent, now));
    // A name the directory did not confirm as the account holder's (frozen in the evidence).
    found.extend(
        checked
            .payee
            .as_ref()
            .and_then(PayeeEvidence::name_check)
            .and_then(fleet_core::payee::NameCheck::cue),
    );
    Ok(flagged(checked, rule, found, "payment"))
}
