//! The intake's lookup of an intent's payee: who a payment really goes to, as the
//! provider's directory describes it now. What is found is kept with the operation as
//! evidence (`operations.payee`); a payee that cannot be found is recorded as unknown and
//! the intent's quorum policy decides (refuse it, or ask for more approvers).
//!
//! The lookup is read-only, so it is repeated a bounded number of times when the directory
//! gives no answer; only the masked account and fingerprint are ever logged.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use fleet_core::payee::{payee_id, PayeeEvidence};
use fleet_core::Action;
use fleet_providers::Providers;
use tracing::{info, warn};

/// Lookups of one payee before it is recorded as unknown.
const ATTEMPTS: u32 = 3;
/// The pause before the n-th retry is n times this.
const BACKOFF: Duration = Duration::from_millis(100);

/// The providers' directories of payees.
#[derive(Debug, Clone)]
pub struct PayeeDirectory {
    providers: Arc<Providers>,
}

impl PayeeDirectory {
    pub fn new(providers: Arc<Providers>) -> Self {
        PayeeDirectory { providers }
    }

    /// The evidence of `payload`'s payee, for an action that names one at a provider that
    /// keeps a directory; `None` otherwise (nothing to look up).
    pub async fn evidence(
        &self,
        operation_id: &str,
        action: Action,
        payload: &serde_json::Value,
    ) -> Option<PayeeEvidence> {
        let spec = action.spec();
        let id = payee_id(spec.payee, payload)?;
        let provider = self.providers.get(spec.provider.as_str())?;
        let mut tries = 0;
        let answer = loop {
            tries += 1;
            let answer = provider.look_up_payee(id).await?;
            match answer {
                Ok(found) => break Ok(found),
                Err(error) if tries >= ATTEMPTS => {
                    warn!(operation_id, tries, %error, "payee lookup gave no answer; recorded as unknown");
                    break Err(());
                }
                Err(_) => tokio::time::sleep(BACKOFF * tries).await,
            }
        };
        let evidence = PayeeEvidence::of_lookup(
            id,
            answer.as_ref().map(Option::as_ref).map_err(|_| ()),
            Utc::now(),
        );
        match &evidence {
            PayeeEvidence::Found { payee, .. } => info!(
                operation_id,
                payee_version = payee.version,
                verified = payee.verified,
                account = %payee.account.masked,
                fingerprint = %payee.account.fingerprint,
                "payee looked up"
            ),
            PayeeEvidence::Unknown { reason, .. } => {
                warn!(operation_id, reason = reason.as_str(), "payee unknown")
            }
        }
        Some(evidence)
    }
}
