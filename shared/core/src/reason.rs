//! Why an operation moved, was escalated or was noted: the reason of a history row
//! (`operation_events.reason`) and of the row itself (`operations.status_reason`).
//!
//! Every reason the fleet writes is a [`Reason`], named once here. The wire name
//! ([`Reason::as_str`]) is what the database stores, the outbox trigger reads (a
//! cancellation's reason says which event agents receive, see [`crate::history`]) and the
//! operation view shows; renaming a variant is a compile error wherever it is written or
//! matched, and changing a wire name fails the test that walks [`Reason::ALL`] against
//! the database's mapping.
//!
//! A provider's HTTP status without a better reading is carried as it came
//! ([`Reason::Http`], `http_503`; [`Reason::HttpReplayed`], `http_500_replayed`): the
//! status is the information, so those two are families rather than single names.

use std::sync::OnceLock;

use crate::by_name::{display_by_name, from_str_by_name, serialize_by_name};

/// The largest HTTP status carried in a reason's name: an HTTP status has three digits.
pub const MAX_HTTP_STATUS: u16 = 999;

macro_rules! reasons {
    ($($(#[$doc:meta])* $variant:ident = $name:literal, $words:literal;)*) => {
        /// Why a history row was written (see the module's documentation).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Reason {
            $($(#[$doc])* $variant,)*
            /// A provider's answer with this HTTP status that says nothing more
            /// (`http_<status>`): refused in front of the provider (401, 403, 429) or of
            /// unknown effect (5xx, anything unexpected).
            Http(u16),
            /// A server error the provider replayed from its idempotency record
            /// (`http_<status>_replayed`): the first request's fate is unknown.
            HttpReplayed(u16),
        }

        impl Reason {
            /// Every reason with a single name (the HTTP families aside).
            pub const ALL: &'static [Reason] = &[$(Reason::$variant,)*];

            /// The wire name: as stored in the database and shown in the operation view.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Reason::$variant => $name,)*
                    Reason::Http(status) => http_name(status, false),
                    Reason::HttpReplayed(status) => http_name(status, true),
                }
            }

            /// The reason in words, as a person reads it in the console or fleetctl.
            pub fn words(self) -> &'static str {
                match self {
                    $(Reason::$variant => $words,)*
                    Reason::Http(_) => "the provider answered with this HTTP status and nothing more",
                    Reason::HttpReplayed(_) => "the provider replayed a server error it saved for this key",
                }
            }

            fn single(s: &str) -> Option<Reason> {
                match s {
                    $($name => Some(Reason::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

reasons! {
    // The execute worker, before any provider call.
    /// A person rejected the operation.
    ApprovalRejected = "approval_rejected", "a person rejected it";
    /// Nobody approved it in time.
    ApprovalExpired = "approval_expired", "nobody approved it in time";
    /// Its policy version is no longer in force.
    PolicyOutdated = "policy_outdated", "its policy version is no longer in force";
    /// The approved hash is not the stored snapshot's.
    ApprovedHashMismatch = "approved_hash_mismatch", "the approved hash is not the stored snapshot's";
    /// The stored snapshot no longer hashes to its hash.
    SnapshotHashMismatch = "snapshot_hash_mismatch", "the stored snapshot does not match its hash";
    /// The approvers' signatures do not make the quorum.
    ApprovalSignatureInvalid = "approval_signature_invalid", "the approvers' signatures do not make the quorum";
    /// The stored payload does not fit its action.
    UnbuildableRequest = "unbuildable_request", "the stored payload does not fit its action";
    /// The provider may have forgotten the idempotency key since its first use.
    KeyRetentionPassed = "key_retention_passed", "the provider may have forgotten the idempotency key";
    /// A corrected intent replaced it.
    Superseded = "superseded", "a corrected intent replaced it";

    // What a provider call proved.
    /// The provider refused it for good.
    ProviderRejected = "provider_rejected", "the provider refused it";
    /// A conditional update met another version of the object.
    VersionConflict = "version_conflict", "the object changed since the approval (another version)";
    /// A conditional update met another status of the object.
    StatusConflict = "status_conflict", "the object changed since the approval (another status)";
    /// The payee changed since the approval.
    BeneficiaryChanged = "beneficiary_changed", "the payee changed since the approval";
    /// The payee changed after an earlier attempt whose fate is unknown.
    BeneficiaryChangedAfterUncertainAttempt = "beneficiary_changed_after_uncertain_attempt", "the payee changed after an attempt whose fate is unknown";
    /// A conditional update refused after an earlier attempt whose fate is unknown.
    ConflictAfterUncertainAttempt = "conflict_after_uncertain_attempt", "a conflict after an attempt whose fate is unknown";
    /// The request provably never left this host.
    NotSent = "not_sent", "the request never left";
    /// No answer came back in time.
    Timeout = "timeout", "no answer came back in time";
    /// The connection was reset before a complete answer.
    ConnectionReset = "connection_reset", "the connection was reset before an answer";
    /// A success the fleet cannot read.
    UnreadableSuccessBody = "unreadable_success_body", "the provider's success could not be read";
    /// The provider holds other parameters under the same idempotency key.
    IdempotencyKeyReused = "idempotency_key_reused", "the provider holds other parameters under its key";
    /// Another request under the same key is still in flight at the provider.
    IdempotencyKeyInUse = "idempotency_key_in_use", "another request with its key is in flight";
    /// The stored snapshot could not be read for a lookup.
    UnreadableSnapshot = "unreadable_snapshot", "the stored snapshot could not be read";

    // A create found by search (a provider without idempotency keys).
    /// The search before the create failed.
    SearchFailed = "search_failed", "the search before the create failed";
    /// The search found more than one object for the operation.
    MultipleMatches = "multiple_matches", "more than one object matches it";
    /// The provider's search may not show a recent create yet.
    SearchLagNotPassed = "search_lag_not_passed", "the provider's search may not show it yet";
    /// A queued create is not found yet.
    QueuedCreateNotFound = "queued_create_not_found", "a queued create is not found yet";
    /// The lease was lost between the search and the create.
    LeaseLostBeforeCreate = "lease_lost_before_create", "the lease was lost before the create";

    // Sweepers and reconcile.
    /// The holder's lease expired during the call.
    LeaseExpired = "lease_expired", "the worker's lease expired during the call";
    /// The claim was lost (its lease ran out, its worker died) before its request was
    /// sent, as the attempt's durable send mark proves: released, nothing to look up.
    ClaimLostBeforeSend = "claim_lost_before_send", "the claim was lost before its request was sent; nothing was sent";
    /// No final answer came before its deadline.
    DeadlinePassed = "deadline_passed", "no final answer came before the deadline";
    /// A lookup settled it.
    Reconciled = "reconciled", "a lookup settled it";
    /// A lookup proved that nothing happened.
    LookupProvedAbsence = "lookup_proved_absence", "a lookup proved nothing happened";
    /// Lookups kept failing.
    LookupFailedRepeatedly = "lookup_failed_repeatedly", "lookups kept failing";
    /// The provider still reports it pending past its deadline.
    StillPending = "still_pending", "the provider still reports it pending";
    /// The provider accepted it, and a lookup does not find it.
    AcceptedButNotFound = "accepted_but_not_found", "accepted, yet a lookup does not find it";
    /// The provider replayed a saved error, so the first attempt's fate is unknown.
    SavedErrorReplayed = "saved_error_replayed", "the provider replayed a saved error";
    /// The deal moved to another version than the approved one.
    VersionMoved = "version_moved", "the object moved to another version";
    /// The deal is not found.
    DealMissing = "deal_missing", "the deal is not found";
    /// The order moved to another status than the approved one.
    StatusMoved = "status_moved", "the order moved to another status";
    /// The order is not found.
    OrderMissing = "order_missing", "the order is not found";
    /// The row names an action or provider this build does not know.
    UnknownAction = "unknown_action", "its action is unknown to this version";
    /// The post-settlement audit found a second effect.
    DuplicateEffect = "duplicate_effect", "the audit found a second effect";
    /// The post-settlement audit found exactly one effect.
    SingleEffect = "single_effect", "the audit found one effect";

    // People.
    /// An operator settled it with evidence.
    OperatorResolution = "operator_resolution", "an operator settled it";
    /// An operator took it out of the workers' hands.
    Disputed = "disputed", "an operator disputed it";
    /// An approver was removed: its approvals of unstarted operations no longer count.
    ApproverRemoved = "approver_removed", "an approver was removed, so their approval no longer counts";
    /// An approver was given another role: its approvals of unstarted operations no
    /// longer count.
    ApproverRoleChanged = "approver_role_changed", "an approver's role changed, so their approval no longer counts";
    /// An approver lost the operation's tenant: its approvals there no longer count.
    TenantWithdrawn = "tenant_withdrawn", "an approver lost this tenant, so their approval no longer counts";
    /// The standing mandate that approved it was revoked before any claim.
    MandateRevoked = "mandate_revoked", "the standing mandate that approved it was revoked";
    /// Its approver (or an admin) revoked an approval before any claim.
    ApprovalRevoked = "approval_revoked", "an approval was revoked, so it no longer counts";

    // Provider events (webhooks).
    /// A provider's event settled it.
    Webhook = "webhook", "a provider's event settled it";
    /// A provider's event contradicts a final row.
    WebhookContradictsFinal = "webhook_contradicts_final", "a provider's event contradicts its final status";
    /// A provider's event about an operation nobody has claimed.
    WebhookBeforeClaim = "webhook_before_claim", "a provider's event came before any call";
    /// A provider's event the state machine would not apply to a row it was decided for.
    WebhookNotApplicable = "webhook_not_applicable", "a provider's event that could not be applied";
    /// A provider's event about a disputed operation (only noted).
    WebhookOnDisputed = "webhook_on_disputed", "a provider's event about a disputed operation";
    /// A provider's event about an operation already escalated (only noted).
    OperationEscalated = "operation_escalated", "a provider's event about an escalated operation";
    /// The event came from another provider.
    WebhookProviderMismatch = "webhook_provider_mismatch", "a provider's event from another provider";
    /// The event is about an object of another action.
    WebhookActionMismatch = "webhook_action_mismatch", "a provider's event about another action";
    /// The event names another reference.
    WebhookReferenceMismatch = "webhook_reference_mismatch", "a provider's event with another reference";
    /// The event names another object.
    WebhookExternalIdMismatch = "webhook_external_id_mismatch", "a provider's event about another object";
    /// The event says another amount.
    WebhookAmountMismatch = "webhook_amount_mismatch", "a provider's event with another amount";
    /// The event says another currency.
    WebhookCurrencyMismatch = "webhook_currency_mismatch", "a provider's event with another currency";
}

/// `http_<status>` and `http_<status>_replayed`, made once for every status up to
/// [`MAX_HTTP_STATUS`] so that [`Reason::as_str`] is a `&'static str` like every other
/// name. A larger status (no HTTP client gives one) is named by the largest.
fn http_name(status: u16, replayed: bool) -> &'static str {
    static NAMES: OnceLock<Vec<[String; 2]>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        (0..=MAX_HTTP_STATUS)
            .map(|s| [format!("http_{s}"), format!("http_{s}_replayed")])
            .collect()
    });
    &names[usize::from(status.min(MAX_HTTP_STATUS))][usize::from(replayed)]
}

/// The status of `http_<status>` (digits as [`Reason::as_str`] writes them, no sign,
/// no leading zero).
fn http_status(digits: &str) -> Option<u16> {
    let status: u16 = digits.parse().ok()?;
    (status <= MAX_HTTP_STATUS && status.to_string() == digits).then_some(status)
}

impl Reason {
    /// The reason named `s` exactly as [`Reason::as_str`] writes it.
    pub fn parse(s: &str) -> Option<Reason> {
        if let Some(reason) = Reason::single(s) {
            return Some(reason);
        }
        let rest = s.strip_prefix("http_")?;
        match rest.strip_suffix("_replayed") {
            Some(digits) => http_status(digits).map(Reason::HttpReplayed),
            None => http_status(rest).map(Reason::Http),
        }
    }
}

/// A name [`Reason::parse`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown reason {0:?}")]
pub struct UnknownReason(pub String);

from_str_by_name!(Reason, UnknownReason);

display_by_name!(Reason);

serialize_by_name!(Reason);

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_reason_round_trips_its_name_and_names_are_unique() {
        let mut names = HashSet::new();
        for &reason in Reason::ALL {
            assert_eq!(Reason::parse(reason.as_str()), Some(reason));
            assert_eq!(reason.as_str().parse::<Reason>(), Ok(reason));
            assert!(names.insert(reason.as_str()), "{reason} twice");
            assert!(!reason.words().is_empty());
            assert!(
                !reason.as_str().starts_with("http_"),
                "{reason} would read as an HTTP status"
            );
        }
        for status in [0, 200, 401, 429, 500, 503, MAX_HTTP_STATUS] {
            for reason in [Reason::Http(status), Reason::HttpReplayed(status)] {
                assert_eq!(Reason::parse(reason.as_str()), Some(reason));
            }
        }
    }

    #[test]
    fn the_http_families_keep_the_names_written_before() {
        assert_eq!(Reason::Http(429).as_str(), "http_429");
        assert_eq!(Reason::HttpReplayed(500).as_str(), "http_500_replayed");
        for stranger in [
            "http_",
            "http_0429",
            "http_+429",
            "http_1000",
            "http_500_replayed_replayed",
            "http__replayed",
            "Approval_Expired",
            "",
        ] {
            assert_eq!(Reason::parse(stranger), None, "{stranger}");
        }
        assert_eq!(
            "hash_mismatch".parse::<Reason>(),
            Err(UnknownReason("hash_mismatch".into()))
        );
    }
}
