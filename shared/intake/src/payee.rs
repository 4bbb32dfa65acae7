//! The intake's lookup of an intent's payee: who a payment really goes to, as the
//! provider's directory describes it now. What is found is kept with the operation as
//! evidence (`operations.payee`); a payee that cannot be found is recorded as unknown and
//! the intent's quorum policy decides (refuse it, or ask for more approvers).
//!
//! The lookup is read-only, so it is repeated a bounded number of times when the directory
//! gives no answer; only the masked account and fingerprint are ever logged.
//!
//! Only a definite answer is evidence: the payee found, or a 404 (not in the directory).
//! A directory that gives no answer (429, 5xx, a timeout, a refused connection, a body
//! that is not the documented shape) says nothing about the payee, so it never refuses
//! the intent: the lookup answers [`DirectoryUnreachable`] and the door decides (the
//! queue parks the message and asks again later, the API answers 503). Each lookup takes
//! a slot of the provider's shared schedule when the process paces that provider
//! (docs/design.md#provider-rates), so a 429's pause is waited out before the next try.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use fleet_core::payee::name_check::asked_name;
use fleet_core::payee::{payee_id, NameCheck, PayeeEvidence};
use fleet_core::stripe::charge::PayerRefusal;
use fleet_core::Action;
use fleet_providers::{LookupError, Providers};
use tracing::{info, warn};

pub(crate) mod name_check;

/// Lookups of one payee in one intake before the directory is taken as unreachable.
const ATTEMPTS: u32 = 3;
/// The pause before the n-th retry is n times this.
const BACKOFF: Duration = Duration::from_millis(100);

/// The directory gave no answer after every try: nothing is known about the payee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirectoryUnreachable;

/// Whether a lookup's failure is the directory's silence (ask again later) rather than an
/// answer about the payee. Only an id that cannot even be sent is definite.
fn gave_no_answer(error: &LookupError) -> bool {
    !matches!(error, LookupError::Path(_))
}

/// The providers' directories of payees.
#[derive(Debug, Clone)]
pub struct PayeeDirectory {
    providers: Arc<Providers>,
}

impl PayeeDirectory {
    pub fn new(providers: Arc<Providers>) -> Self {
        PayeeDirectory { providers }
    }

    /// The providers it reads (the intake's other reads of the world use them too).
    pub(crate) fn providers(&self) -> &Providers {
        &self.providers
    }

    /// The evidence of `payload`'s payee, for an action that names one at a provider that
    /// keeps a directory; `Ok(None)` otherwise (nothing to look up). `Err`: the directory
    /// gave no answer, every try.
    pub async fn evidence(
        &self,
        operation_id: &str,
        action: Action,
        payload: &serde_json::Value,
    ) -> Result<Option<PayeeEvidence>, DirectoryUnreachable> {
        let spec = action.spec();
        let Some(id) = payee_id(spec.payee, payload) else {
            return Ok(None);
        };
        let Some(provider) = self.providers.get(spec.provider.as_str()) else {
            return Ok(None);
        };
        // The name is checked in the same lookup, so the check and the version kept are
        // the directory's answer at one instant.
        let asked = asked_name(action, payload);
        let mut tries = 0;
        let answer = loop {
            tries += 1;
            let Some(answer) = provider.look_up_payee(id, asked.flatten()).await else {
                return Ok(None);
            };
            match answer {
                Ok(found) => break Ok(found),
                Err(error) if !gave_no_answer(&error) => {
                    warn!(operation_id, %error, "payee cannot be looked up; recorded as unknown");
                    break Err(());
                }
                Err(error) if tries >= ATTEMPTS => {
                    warn!(operation_id, tries, %error, "payee directory gave no answer; the intent waits");
                    return Err(DirectoryUnreachable);
                }
                Err(_) => tokio::time::sleep(BACKOFF * tries).await,
            }
        };
        let evidence = PayeeEvidence::of_lookup(
            id,
            answer.as_ref().map(Option::as_ref).map_err(|_| ()),
            Utc::now(),
        );
        let evidence = match (asked, &answer) {
            (Some(name), Ok(found)) => {
                evidence.with_name_check(NameCheck::judge(name, found.as_ref()))
            }
            _ => evidence,
        };
        match &evidence {
            PayeeEvidence::Found { payee, .. } => info!(
                operation_id,
                payee_version = payee.version,
                verified = payee.verified,
                name_check = evidence.name_check().map_or("-", |c| c.result.as_str()),
                account = %payee.account.masked,
                fingerprint = %payee.account.fingerprint,
                "payee looked up"
            ),
            PayeeEvidence::Unknown { reason, .. } => {
                warn!(operation_id, reason = reason.as_str(), "payee unknown")
            }
        }
        Ok(Some(evidence))
    }

    /// Who `payload` takes money from, for an action whose provider describes them (a
    /// charge at Stripe: the customer and the saved payment method); `Ok(None)`
    /// otherwise. `Ok(Some(Err(_)))`: Stripe said they cannot be charged as named (an
    /// unknown customer or payment method, or one not the customer's), a refusal. `Err`:
    /// no answer, every try; nothing is known, so nothing is refused.
    pub async fn payer(
        &self,
        operation_id: &str,
        tenant: &str,
        action: Action,
        payload: &serde_json::Value,
    ) -> Result<Option<Result<PayeeEvidence, PayerRefusal>>, DirectoryUnreachable> {
        let Some(provider) = self.providers.get(action.spec().provider.as_str()) else {
            return Ok(None);
        };
        let mut tries = 0;
        loop {
            tries += 1;
            let Some(answer) = provider.look_up_payer(tenant, action, payload).await else {
                return Ok(None);
            };
            match answer {
                Ok(judged) => {
                    match &judged {
                        Ok(PayeeEvidence::Found { payee, .. }) => info!(
                            operation_id,
                            account = %payee.account.masked,
                            fingerprint = %payee.account.fingerprint,
                            "payer looked up"
                        ),
                        Ok(PayeeEvidence::Unknown { reason, .. }) => {
                            warn!(operation_id, reason = reason.as_str(), "payer unknown")
                        }
                        Err(refusal) => {
                            warn!(
                                operation_id,
                                reason = refusal.refusal().as_str(),
                                "payer refused"
                            )
                        }
                    }
                    return Ok(Some(judged));
                }
                Err(error) if !gave_no_answer(&error) => {
                    warn!(operation_id, %error, "payer cannot be looked up; recorded as unknown");
                    return Ok(Some(Ok(PayeeEvidence::Unknown {
                        id: payee_id(action.spec().payee, payload)
                            .unwrap_or_default()
                            .to_owned(),
                        reason: fleet_core::payee::UnknownPayee::LookupFailed,
                        looked_up_at: Utc::now(),
                    })));
                }
                Err(error) if tries >= ATTEMPTS => {
                    warn!(operation_id, tries, %error, "payer's provider gave no answer; the intent waits");
                    return Err(DirectoryUnreachable);
                }
                Err(_) => tokio::time::sleep(BACKOFF * tries).await,
            }
        }
    }
}
