//! What every handler shares.

use std::sync::Arc;

use fleet_intake::IntakeRules;
use fleet_store::ApiStore;
use tokio_util::sync::CancellationToken;

use crate::decisions::Decisions;
use crate::public_url::PublicUrl;
use crate::rate_limit::{AddressLimits, RateLimits};
use crate::waiters::Waiters;

#[derive(Clone)]
pub struct AppState {
    pub store: ApiStore,
    /// What an intent is checked against, as prepare checks it: the providers'
    /// guarantees and the quorum policies.
    pub intake: IntakeRules,
    /// Approve, reject, resolve, dispute.
    pub decisions: Decisions,
    pub waiters: Arc<Waiters>,
    /// Each principal's request rate, counted as it is authenticated.
    pub rate_limits: Arc<RateLimits>,
    /// Each source address's requests without a valid credential, counted before any
    /// lookup.
    pub address_limits: Arc<AddressLimits>,
    /// Cancelled at SIGTERM: waiting requests answer at once with the current view.
    pub shutdown: CancellationToken,
    /// Where people and agents reach the API: the base of the links handed out.
    pub public_url: PublicUrl,
    /// Whether the console serves approval pages (an OpenID Connect issuer is configured):
    /// only then are links to them handed out.
    pub approval_pages: bool,
    /// The key evidence bundles are signed with, and the earlier ones still published.
    pub evidence: Arc<crate::evidence_key::EvidenceKeys>,
}
