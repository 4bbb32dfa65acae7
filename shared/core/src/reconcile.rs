//! Reconciliation verdicts: what a provider lookup proves, given the provider's documented
//! contract (search lag, key retention) and what we know of our own attempts. Pure: ages
//! are measured by the database clock and passed in.
//!
//! The rule that keeps effects single: an empty search proves absence only once the
//! provider can no longer be working on an earlier request (its documented maximum request
//! time, counted from the start of the latest attempt) and that request's effect would be
//! searchable (its search lag); and a same-key retry is allowed only while the key is still
//! inside the provider's retention window. Anything ambiguous goes to a person.
//!
//! The worker's step is here too: which rows it reconciles and the fenced move each
//! verdict makes ([`next_step`], [`found_move`] and the other moves of `step`).

mod settle;
mod step;

pub use crate::lookup::{Found, Lookup, Reading};
use crate::Reason;

pub use settle::{
    definitive_attempt, lookup_backoff, settle, settle_unknown, AskAgain, AttemptSeen, Settle,
    SettleFacts, UnknownEvidence, MAX_LOOKUP_BACKOFF,
};
pub use step::{
    absent_move, escalate_move, found_move, lease_expired_move, lost_claim_move, next_step,
    past_deadline_move, LookupMove, RowDue, SendMark, Step,
};

/// The provider's documented contract, as configured by the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderContract {
    /// How long a committed effect may take to appear in a search.
    pub search_lag_ms: u64,
    /// How long after a request started the provider may still commit it (it keeps working
    /// after our client gave up). Absence is never concluded before this has passed.
    pub max_request_ms: u64,
    pub key_retention_ms: u64,
    pub escalate_after_failed_lookups: u32,
}

/// What we know locally, measured with the database clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptAges {
    /// Age of the newest attempt (the one whose effect a search might not show yet),
    /// measured from the last moment its request could have reached the provider.
    pub newest_ms: Option<u64>,
    /// Age of the start of the newest attempt: the provider may commit its request until
    /// `max_request_ms` after that.
    pub newest_start_ms: Option<u64>,
    /// Age of the oldest attempt (when the provider first saw the key).
    pub oldest_ms: Option<u64>,
    pub failed_lookups_so_far: u32,
}

/// A retry needs time to happen after the verdict; never retry this close to the end of
/// the key's retention.
pub const RETENTION_SAFETY_MARGIN_MS: u64 = 60_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Exactly one match: settle the operation with it.
    Resolve(Found),
    /// Proven absent, and a same-key retry is safe: back to not_started.
    Absent,
    /// Nothing found yet, but a fresh object may not be searchable yet: ask again later.
    WaitForSearchLag { wait_ms: u64 },
    /// The lookup failed; ask again later (the failure is counted).
    RetryLater,
    /// A person must decide.
    Escalate(Reason),
}

/// Who judges a lookup, which decides what a failed or unmatched one costs and what an
/// empty one must also prove. Both share the rest: one match is ours, several are never
/// picked from, and an empty search proves absence only once an earlier request can no
/// longer commit and its effect would be searchable ([`absence_provable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judge {
    /// Reconcile, about an unknown operation: absence sends it back for a same-key retry,
    /// so the key must still be deduplicated by the provider; failed lookups count toward
    /// a person, and an answer that cannot be matched goes to one.
    Reconcile,
    /// Execute, searching before a create the provider cannot deduplicate
    /// (`Effect::SearchedCreate`): the create carries no key the provider would
    /// deduplicate, so the key's retention proves nothing here; and nothing has been sent
    /// in this claim yet, so a search that failed or cannot be matched only releases the
    /// claim for a later attempt (which searches again), nothing is counted or escalated.
    BeforeCreate,
}

/// Reconcile's verdict on a lookup ([`judge_as`] by [`Judge::Reconcile`]).
pub fn judge(lookup: &Lookup, ages: AttemptAges, contract: ProviderContract) -> Verdict {
    judge_as(Judge::Reconcile, lookup, ages, contract)
}

/// What `lookup` proves, for `who`.
pub fn judge_as(
    who: Judge,
    lookup: &Lookup,
    ages: AttemptAges,
    contract: ProviderContract,
) -> Verdict {
    match (who, lookup) {
        (Judge::BeforeCreate, Lookup::Failed | Lookup::Ambiguous(_)) => Verdict::RetryLater,
        (Judge::Reconcile, Lookup::Failed)
            if ages.failed_lookups_so_far + 1 >= contract.escalate_after_failed_lookups =>
        {
            Verdict::Escalate(Reason::LookupFailedRepeatedly)
        }
        (Judge::Reconcile, Lookup::Failed) => Verdict::RetryLater,
        (Judge::Reconcile, Lookup::Ambiguous(reason)) => Verdict::Escalate(*reason),
        (_, Lookup::Matches(found)) if found.len() > 1 => {
            Verdict::Escalate(Reason::MultipleMatches)
        }
        (_, Lookup::Matches(found)) if found.len() == 1 => Verdict::Resolve(found[0].clone()),
        (_, Lookup::Matches(_)) => judge_absence(who, ages, contract),
    }
}

fn judge_absence(who: Judge, ages: AttemptAges, contract: ProviderContract) -> Verdict {
    if who == Judge::Reconcile {
        let Some(oldest) = ages.oldest_ms else {
            // No attempt row: nothing was ever sent (the claim writes the row before any
            // call).
            return Verdict::Absent;
        };
        if !key_trusted(oldest, contract) {
            // The provider may have forgotten the key: a retry could create a second effect.
            return Verdict::Escalate(Reason::KeyRetentionPassed);
        }
    }
    // Before a create, no earlier attempt means no age to wait for: absence is provable.
    match absence_provable(ages, contract) {
        Ok(()) => Verdict::Absent,
        Err(wait_ms) => Verdict::WaitForSearchLag { wait_ms },
    }
}

/// Whether a key first used `first_use_age_ms` ago is still deduplicated by the provider
/// for long enough to send a request with it now (retention minus a safety margin).
pub fn key_trusted(first_use_age_ms: u64, contract: ProviderContract) -> bool {
    first_use_age_ms.saturating_add(RETENTION_SAFETY_MARGIN_MS) < contract.key_retention_ms
}

/// Whether an empty search can prove that no earlier attempt took effect: `Err(wait_ms)`
/// while the provider may still commit an earlier request, or its effect may not be
/// searchable yet. Used by reconcile before a same-key retry and by execute before a create
/// that has no key to deduplicate it.
pub fn absence_provable(ages: AttemptAges, contract: ProviderContract) -> Result<(), u64> {
    let lag_wait = ages
        .newest_ms
        .map_or(0, |newest| contract.search_lag_ms.saturating_sub(newest));
    let request_wait = ages.newest_start_ms.or(ages.newest_ms).map_or(0, |start| {
        contract
            .max_request_ms
            .saturating_add(contract.search_lag_ms)
            .saturating_sub(start)
    });
    match lag_wait.max(request_wait) {
        0 => Ok(()),
        wait_ms => Err(wait_ms),
    }
}

/// What the post-settlement audit concludes from the provider objects carrying our
/// reference, looked up once the provider can no longer commit an earlier request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditFinding {
    /// At most one object: the operation had one effect (none found is recorded as
    /// evidence; the settled id was proven when the operation succeeded).
    Single,
    /// Several objects for one approved operation: a data incident for a person.
    Duplicate,
    /// The lookup failed: audit again later.
    Inconclusive,
}

pub fn audit(lookup: &Lookup) -> AuditFinding {
    match lookup {
        Lookup::Matches(found) if found.len() > 1 => AuditFinding::Duplicate,
        Lookup::Matches(_) => AuditFinding::Single,
        Lookup::Failed | Lookup::Ambiguous(_) => AuditFinding::Inconclusive,
    }
}

/// When an operation that succeeded after an uncertain attempt is audited: after the
/// provider can no longer commit an earlier request and its effect would be searchable.
pub fn audit_delay_ms(contract: ProviderContract) -> u64 {
    contract
        .max_request_ms
        .saturating_add(contract.search_lag_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONTRACT: ProviderContract = ProviderContract {
        search_lag_ms: 60_000,
        max_request_ms: 0,
        key_retention_ms: 86_400_000,
        escalate_after_failed_lookups: 3,
    };

    fn ages(newest: u64, oldest: u64) -> AttemptAges {
        AttemptAges {
            newest_ms: Some(newest),
            newest_start_ms: Some(newest),
            oldest_ms: Some(oldest),
            failed_lookups_so_far: 0,
        }
    }

    fn paid(id: &str) -> Found {
        Found::Succeeded {
            external_id: id.into(),
        }
    }

    #[test]
    fn one_match_resolves_with_it() {
        assert_eq!(
            judge(&Lookup::Matches(vec![paid("pay_1")]), ages(0, 0), CONTRACT),
            Verdict::Resolve(paid("pay_1"))
        );
    }

    #[test]
    fn several_matches_are_never_picked_from() {
        assert_eq!(
            judge(
                &Lookup::Matches(vec![paid("pay_1"), paid("pay_2")]),
                ages(120_000, 120_000),
                CONTRACT
            ),
            Verdict::Escalate(Reason::MultipleMatches)
        );
    }

    #[test]
    fn an_empty_search_inside_the_lag_proves_nothing_yet() {
        assert_eq!(
            judge(&Lookup::Matches(vec![]), ages(10_000, 10_000), CONTRACT),
            Verdict::WaitForSearchLag { wait_ms: 50_000 }
        );
        assert_eq!(
            judge(&Lookup::Matches(vec![]), ages(60_000, 60_000), CONTRACT),
            Verdict::Absent
        );
    }

    #[test]
    fn absence_waits_until_the_provider_can_no_longer_commit_an_earlier_request() {
        // A CRM that may still commit a request 120 s after it started, with a 5 s search
        // lag: the attempt started 30 s ago and gave up (unknown) 20 s ago.
        let crm = ProviderContract {
            search_lag_ms: 5_000,
            max_request_ms: 120_000,
            key_retention_ms: u64::MAX,
            escalate_after_failed_lookups: 3,
        };
        let a = AttemptAges {
            newest_ms: Some(20_000),
            newest_start_ms: Some(30_000),
            oldest_ms: Some(30_000),
            failed_lookups_so_far: 0,
        };
        assert_eq!(
            judge(&Lookup::Matches(vec![]), a, crm),
            Verdict::WaitForSearchLag { wait_ms: 95_000 }
        );
        assert_eq!(absence_provable(a, crm), Err(95_000));
        let later = AttemptAges {
            newest_ms: Some(115_000),
            newest_start_ms: Some(125_000),
            ..a
        };
        assert_eq!(absence_provable(later, crm), Ok(()));
        assert_eq!(judge(&Lookup::Matches(vec![]), later, crm), Verdict::Absent);
    }

    #[test]
    fn the_search_lag_counts_from_the_last_moment_a_request_could_reach_the_provider() {
        let c = ProviderContract {
            max_request_ms: 1_000,
            ..CONTRACT
        };
        let a = AttemptAges {
            newest_ms: Some(30_000),
            newest_start_ms: Some(90_000),
            oldest_ms: Some(90_000),
            failed_lookups_so_far: 0,
        };
        assert_eq!(absence_provable(a, c), Err(30_000));
    }

    #[test]
    fn an_empty_search_with_the_key_near_or_past_retention_goes_to_a_person() {
        let late = 86_400_000 - RETENTION_SAFETY_MARGIN_MS;
        assert_eq!(
            judge(&Lookup::Matches(vec![]), ages(120_000, late), CONTRACT),
            Verdict::Escalate(Reason::KeyRetentionPassed)
        );
        assert_eq!(
            judge(&Lookup::Matches(vec![]), ages(120_000, late - 1), CONTRACT),
            Verdict::Absent
        );
    }

    #[test]
    fn the_audit_escalates_only_several_effects() {
        assert_eq!(
            audit(&Lookup::Matches(vec![paid("pay_1"), paid("pay_2")])),
            AuditFinding::Duplicate
        );
        assert_eq!(
            audit(&Lookup::Matches(vec![paid("pay_1")])),
            AuditFinding::Single
        );
        assert_eq!(audit(&Lookup::Matches(vec![])), AuditFinding::Single);
        assert_eq!(audit(&Lookup::Failed), AuditFinding::Inconclusive);
        let crm = ProviderContract {
            search_lag_ms: 5_000,
            max_request_ms: 120_000,
            key_retention_ms: u64::MAX,
            escalate_after_failed_lookups: 3,
        };
        assert_eq!(audit_delay_ms(crm), 125_000);
    }

    #[test]
    fn repeated_lookup_failures_escalate() {
        let mut a = ages(0, 0);
        assert_eq!(judge(&Lookup::Failed, a, CONTRACT), Verdict::RetryLater);
        a.failed_lookups_so_far = 2;
        assert_eq!(
            judge(&Lookup::Failed, a, CONTRACT),
            Verdict::Escalate(Reason::LookupFailedRepeatedly)
        );
    }

    #[test]
    fn an_ambiguous_answer_goes_to_a_person() {
        assert_eq!(
            judge(
                &Lookup::Ambiguous(Reason::VersionMoved),
                ages(0, 0),
                CONTRACT
            ),
            Verdict::Escalate(Reason::VersionMoved)
        );
    }

    #[test]
    fn before_a_create_the_verdict_is_reconciles_but_for_what_a_claim_may_retry() {
        let before = |lookup: &Lookup, a: AttemptAges, c: ProviderContract| {
            judge_as(Judge::BeforeCreate, lookup, a, c)
        };
        // The same verdict on what a search found, and on when an empty one proves absence.
        for (lookup, a) in [
            (Lookup::Matches(vec![paid("pay_1")]), ages(0, 0)),
            (
                Lookup::Matches(vec![paid("pay_1"), paid("pay_2")]),
                ages(0, 0),
            ),
            (Lookup::Matches(vec![]), ages(10_000, 10_000)),
            (Lookup::Matches(vec![]), ages(60_000, 60_000)),
        ] {
            assert_eq!(
                before(&lookup, a, CONTRACT),
                judge(&lookup, a, CONTRACT),
                "{lookup:?}"
            );
        }
        // A failed or unmatched search only releases the claim, however often it failed.
        let mut tried = ages(0, 0);
        tried.failed_lookups_so_far = 10;
        for lookup in [Lookup::Failed, Lookup::Ambiguous(Reason::VersionMoved)] {
            assert_eq!(before(&lookup, tried, CONTRACT), Verdict::RetryLater);
        }
        // A create carries no key the provider deduplicates: its retention is not waited on.
        let late = 86_400_000 - RETENTION_SAFETY_MARGIN_MS;
        assert_eq!(
            before(&Lookup::Matches(vec![]), ages(120_000, late), CONTRACT),
            Verdict::Absent
        );
    }

    #[test]
    fn no_attempt_means_nothing_was_sent() {
        let none = AttemptAges {
            newest_ms: None,
            newest_start_ms: None,
            oldest_ms: None,
            failed_lookups_so_far: 0,
        };
        assert_eq!(
            judge(&Lookup::Matches(vec![]), none, CONTRACT),
            Verdict::Absent
        );
    }
}
