//! A create the provider cannot deduplicate (`Effect::SearchedCreate`, e.g.
//! `crm.deal.create`) is preceded, on every claim, by a search by the reference it
//! carries. What that search proves is reconcile's verdict, judged for execute
//! ([`judge_as`] by [`Judge::BeforeCreate`]); here is what the claim does with it.

use crate::attempt_record::AttemptDetail;
use crate::lookup::Lookup;
use crate::reconcile::{judge_as, AttemptAges, Judge, ProviderContract, Verdict};
use crate::{Outcome, Reason};

/// The claim's answer without a create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchedAnswer {
    pub outcome: Outcome,
    /// The attempt's detail: why no create went out.
    pub detail: AttemptDetail,
    /// The attempt records the ids the search found (when the answer rests on them).
    pub keeps_found: bool,
}

/// What a claim does after the search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeforeCreate {
    /// No create: this answer settles the claim.
    Answer(SearchedAnswer),
    /// Absence proven: create, unless an earlier create was queued
    /// ([`queued_create_not_found`]).
    Create,
}

/// What the search proves before a create; `ages` are those of the attempts before this
/// claim, measured before the search ran (it proves absence only for what could have been
/// committed and indexed by then).
pub fn before_create(
    lookup: &Lookup,
    ages: AttemptAges,
    contract: ProviderContract,
) -> BeforeCreate {
    let answer = match judge_as(Judge::BeforeCreate, lookup, ages, contract) {
        // One object found: it is ours, no create.
        Verdict::Resolve(found) => SearchedAnswer {
            outcome: Outcome::from(found),
            detail: AttemptDetail::FoundBySearch,
            keeps_found: true,
        },
        // Several (the only escalation before a create): a data incident for a person,
        // never pick one.
        Verdict::Escalate(reason) => SearchedAnswer {
            outcome: Outcome::Unknown {
                reason,
                escalate: true,
            },
            detail: AttemptDetail::Because { reason },
            keeps_found: true,
        },
        // An earlier create may still commit, or exist and not be searchable yet:
        // reconcile waits until an empty search proves absence.
        Verdict::WaitForSearchLag { .. } => SearchedAnswer {
            outcome: Outcome::Unknown {
                reason: Reason::SearchLagNotPassed,
                escalate: false,
            },
            detail: AttemptDetail::Because {
                reason: Reason::SearchLagNotPassed,
            },
            keeps_found: false,
        },
        // Nothing was sent: the claim is released for a later attempt.
        Verdict::RetryLater => SearchedAnswer {
            outcome: Outcome::NotExecuted {
                reason: Reason::SearchFailed,
            },
            detail: AttemptDetail::Because {
                reason: Reason::SearchFailed,
            },
            keeps_found: false,
        },
        Verdict::Absent => return BeforeCreate::Create,
    };
    BeforeCreate::Answer(answer)
}

/// The provider queued an earlier create (an attempt it accepted) that the search does not
/// show yet: it may still appear. Never create twice; reconcile keeps looking.
pub fn queued_create_not_found() -> SearchedAnswer {
    SearchedAnswer {
        outcome: Outcome::Unknown {
            reason: Reason::QueuedCreateNotFound,
            escalate: false,
        },
        detail: AttemptDetail::Because {
            reason: Reason::QueuedCreateNotFound,
        },
        keeps_found: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lookup::Found;

    const CRM: ProviderContract = ProviderContract {
        search_lag_ms: 5_000,
        max_request_ms: 120_000,
        key_retention_ms: u64::MAX,
        escalate_after_failed_lookups: u32::MAX,
    };

    const NO_ATTEMPT: AttemptAges = AttemptAges {
        newest_ms: None,
        newest_start_ms: None,
        oldest_ms: None,
        failed_lookups_so_far: 0,
    };

    fn started(ago_ms: u64) -> AttemptAges {
        AttemptAges {
            newest_ms: Some(ago_ms),
            newest_start_ms: Some(ago_ms),
            oldest_ms: Some(ago_ms),
            failed_lookups_so_far: 0,
        }
    }

    fn deal(id: &str) -> Found {
        Found::Succeeded {
            external_id: id.into(),
        }
    }

    fn answer(outcome: Outcome, detail: AttemptDetail, keeps_found: bool) -> BeforeCreate {
        BeforeCreate::Answer(SearchedAnswer {
            outcome,
            detail,
            keeps_found,
        })
    }

    #[test]
    fn one_object_found_is_ours_and_nothing_is_created() {
        assert_eq!(
            before_create(&Lookup::Matches(vec![deal("deal_1")]), NO_ATTEMPT, CRM),
            answer(
                Outcome::Succeeded {
                    external_id: "deal_1".into()
                },
                AttemptDetail::FoundBySearch,
                true
            )
        );
    }

    #[test]
    fn several_objects_go_to_a_person() {
        assert_eq!(
            before_create(
                &Lookup::Matches(vec![deal("deal_1"), deal("deal_2")]),
                NO_ATTEMPT,
                CRM
            ),
            answer(
                Outcome::Unknown {
                    reason: Reason::MultipleMatches,
                    escalate: true
                },
                AttemptDetail::Because {
                    reason: Reason::MultipleMatches
                },
                true
            )
        );
    }

    #[test]
    fn an_empty_search_creates_only_once_an_earlier_create_can_no_longer_appear() {
        let empty = Lookup::Matches(vec![]);
        assert_eq!(before_create(&empty, NO_ATTEMPT, CRM), BeforeCreate::Create);
        assert_eq!(
            before_create(&empty, started(30_000), CRM),
            answer(
                Outcome::Unknown {
                    reason: Reason::SearchLagNotPassed,
                    escalate: false
                },
                AttemptDetail::Because {
                    reason: Reason::SearchLagNotPassed
                },
                false
            )
        );
        assert_eq!(
            before_create(&empty, started(125_000), CRM),
            BeforeCreate::Create
        );
    }

    #[test]
    fn a_search_that_failed_or_cannot_be_matched_releases_the_claim() {
        for lookup in [Lookup::Failed, Lookup::Ambiguous(Reason::VersionMoved)] {
            assert_eq!(
                before_create(&lookup, started(0), CRM),
                answer(
                    Outcome::NotExecuted {
                        reason: Reason::SearchFailed
                    },
                    AttemptDetail::Because {
                        reason: Reason::SearchFailed
                    },
                    false
                ),
                "{lookup:?}"
            );
        }
    }

    #[test]
    fn the_keys_retention_does_not_stop_a_create_that_carries_no_deduplicated_key() {
        let short_key = ProviderContract {
            key_retention_ms: 1,
            ..CRM
        };
        assert_eq!(
            before_create(&Lookup::Matches(vec![]), started(125_000), short_key),
            BeforeCreate::Create
        );
    }

    #[test]
    fn a_queued_create_is_waited_for() {
        assert_eq!(
            queued_create_not_found(),
            SearchedAnswer {
                outcome: Outcome::Unknown {
                    reason: Reason::QueuedCreateNotFound,
                    escalate: false
                },
                detail: AttemptDetail::Because {
                    reason: Reason::QueuedCreateNotFound,
                },
                keeps_found: false,
            }
        );
    }
}
