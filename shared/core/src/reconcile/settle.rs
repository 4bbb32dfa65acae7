//! What reconcile does with an `unknown` operation: settle it from an attempt that
//! recorded a final answer, or act on [`judge`](super::judge)'s verdict on a lookup, with
//! what the operation's attempts and failed lookups add to it.

use std::time::Duration;

use super::step::{absent_move, escalate_move, found_move, LookupMove};
use super::{judge, AttemptAges, Found, Lookup, ProviderContract, Verdict};
use crate::attempt::AttemptOutcome;
use crate::attempt_record::AttemptDetail;
use crate::outcome::PAYEE_CHANGED_AFTER_UNCERTAIN;
use crate::reason::Reason;
use crate::Status;

/// An inconclusive lookup waits 1 s, 2 s, 4 s … before the next one, at most this long.
pub const MAX_LOOKUP_BACKOFF: Duration = Duration::from_secs(60);

/// One of the operation's attempts, as reconcile reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptSeen<'a> {
    pub fence: i64,
    /// What the attempt recorded; `None` while it is unanswered.
    pub outcome: Option<AttemptOutcome>,
    pub external_id: Option<&'a str>,
    /// What the attempt's detail says ([`AttemptDetail::read`] of its column).
    pub detail: Option<AttemptDetail>,
    pub http_status: Option<i32>,
    /// The provider said it replayed the answer it saved for the key.
    pub replayed: Option<bool>,
}

/// The newest attempt that recorded a final answer, with its fence: a worker that lost
/// its lease still wrote what the provider told it.
pub fn definitive_attempt(attempts: &[AttemptSeen<'_>]) -> Option<(Found, i64)> {
    attempts.iter().rev().find_map(|a| {
        let found = match a.outcome? {
            AttemptOutcome::Succeeded => Found::Succeeded {
                external_id: a.external_id?.to_owned(),
            },
            // Accepted proves the provider took the request, not how it ended: its id is
            // looked up instead (and it forbids ever concluding absence, see `settle`).
            AttemptOutcome::Failed => Found::Failed {
                external_id: a.external_id.unwrap_or_default().to_owned(),
                code: a
                    .detail
                    .as_ref()
                    .and_then(AttemptDetail::refusal_code)
                    .unwrap_or("provider_rejected")
                    .to_owned(),
            },
            _ => return None,
        };
        Some((found, a.fence))
    })
}

/// What [`settle`] weighs besides the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettleFacts {
    /// Lookups of this operation counted as failed so far.
    pub failed_lookups_so_far: u32,
    pub escalate_after_failed_lookups: u32,
    /// The provider accepted one of our requests (a queued create) earlier.
    pub accepted_earlier: bool,
    /// The key holds a saved error: an attempt got a replayed 5xx.
    pub saved_error_replayed: bool,
    /// The provider refused a payment because its payee changed after the approval (after
    /// an earlier attempt whose fate was unknown): sending it again is never the answer.
    pub payee_changed: bool,
}

impl SettleFacts {
    pub fn new(
        attempts: &[AttemptSeen<'_>],
        failed_lookups_so_far: u32,
        contract: ProviderContract,
    ) -> SettleFacts {
        SettleFacts {
            failed_lookups_so_far,
            escalate_after_failed_lookups: contract.escalate_after_failed_lookups,
            accepted_earlier: attempts
                .iter()
                .any(|a| a.outcome == Some(AttemptOutcome::Accepted)),
            saved_error_replayed: attempts
                .iter()
                .any(|a| a.replayed == Some(true) && a.http_status.is_some_and(|s| s >= 500)),
            payee_changed: attempts.iter().any(|a| {
                a.detail.as_ref().and_then(AttemptDetail::reason)
                    == Some(PAYEE_CHANGED_AFTER_UNCERTAIN)
            }),
        }
    }

    /// This lookup, if it fails too, is the last one a person waits for.
    fn out_of_patience(self) -> bool {
        self.failed_lookups_so_far + 1 >= self.escalate_after_failed_lookups
    }
}

/// Why a lookup is recorded and the provider asked again later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskAgain {
    /// The provider accepted a request earlier that no lookup shows yet: not absence.
    AcceptedNotFoundYet,
    /// Nothing found, but a fresh object may not be searchable yet.
    SearchMayLag,
    /// The lookup itself failed.
    LookupFailed,
}

/// What reconcile does next; the worker performs the I/O it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settle {
    /// Settle the operation as the provider's object says.
    Resolve(Found),
    /// Still pending at the provider after its deadline: the lookup is counted as failed
    /// (so that patience runs out), then the operation is accepted again with a new deadline.
    AcceptAgain(Found),
    /// Record the lookup (counted as failed when `failed`) and ask again after `after`.
    AskAgain {
        why: AskAgain,
        failed: bool,
        after: Duration,
    },
    /// Proven absent and a same-key retry is safe: back to not_started, ring execute.
    SendBack,
    /// A person decides.
    Escalate(Reason),
}

pub fn settle(verdict: Verdict, facts: SettleFacts) -> Settle {
    let out_of_patience = facts.out_of_patience();
    let backoff = lookup_backoff(facts.failed_lookups_so_far);
    match verdict {
        // Still pending at the provider after its deadline: accepted again, but only a
        // bounded number of times before a person looks.
        Verdict::Resolve(Found::Pending { .. }) if out_of_patience => {
            Settle::Escalate(Reason::StillPending)
        }
        Verdict::Resolve(found @ Found::Pending { .. }) => Settle::AcceptAgain(found),
        Verdict::Resolve(found) => Settle::Resolve(found),
        // The provider accepted a request (a queued create) that no lookup shows yet: that
        // is not absence. Ask again; a person decides if it never appears.
        Verdict::Absent if facts.accepted_earlier && out_of_patience => {
            Settle::Escalate(Reason::AcceptedButNotFound)
        }
        Verdict::Absent if facts.accepted_earlier => Settle::AskAgain {
            why: AskAgain::AcceptedNotFoundYet,
            failed: true,
            after: backoff,
        },
        // The key holds a saved error (a replayed 5xx): every same-key retry will get the
        // same answer until the key expires, so only a person can move this on.
        Verdict::Absent if facts.saved_error_replayed => {
            Settle::Escalate(Reason::SavedErrorReplayed)
        }
        // Nothing was paid, and the payee is no longer the one approved: a new decision for
        // people, never a second request.
        Verdict::Absent if facts.payee_changed => Settle::Escalate(Reason::BeneficiaryChanged),
        Verdict::Absent => Settle::SendBack,
        Verdict::WaitForSearchLag { wait_ms } => Settle::AskAgain {
            why: AskAgain::SearchMayLag,
            failed: false,
            after: Duration::from_millis(wait_ms),
        },
        Verdict::RetryLater => Settle::AskAgain {
            why: AskAgain::LookupFailed,
            failed: true,
            after: backoff,
        },
        Verdict::Escalate(reason) => Settle::Escalate(reason),
    }
}

/// What reconcile learnt of an unknown operation before deciding: a final answer one of
/// its attempts recorded, else the provider's answer to a lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnknownEvidence {
    /// An attempt recorded a final answer ([`definitive_attempt`]), at this fence: a
    /// worker that lost its lease still wrote what the provider told it.
    Recorded { found: Found, fence: i64 },
    /// No attempt did: the provider was asked.
    LookedUp {
        lookup: Lookup,
        ages: AttemptAges,
        contract: ProviderContract,
        facts: SettleFacts,
    },
}

/// Reconcile's one decision on an unknown operation, from what it learnt.
pub fn settle_unknown(evidence: &UnknownEvidence) -> Settle {
    match evidence {
        UnknownEvidence::Recorded { found, .. } => Settle::Resolve(found.clone()),
        UnknownEvidence::LookedUp {
            lookup,
            ages,
            contract,
            facts,
        } => settle(judge(lookup, *ages, *contract), *facts),
    }
}

impl Settle {
    /// The fenced move of the unknown row this decision makes (recorded with the lookup or
    /// the attempt behind it); `None` when it only asks again later. A pending effect
    /// waits `accepted_deadline_s` more.
    pub fn lookup_move(&self, accepted_deadline_s: u32) -> Option<LookupMove<'_>> {
        match self {
            Settle::Resolve(found) | Settle::AcceptAgain(found) => {
                Some(found_move(found, Status::Unknown, accepted_deadline_s))
            }
            Settle::SendBack => Some(absent_move()),
            Settle::Escalate(reason) => Some(escalate_move(*reason)),
            Settle::AskAgain { .. } => None,
        }
    }
}

/// Exponential pause after an inconclusive lookup: 1 s, 2 s, 4 s … at most a minute, so
/// `ESCALATE_AFTER_LOOKUPS` tries span a useful stretch of time, not a few sweeps.
pub fn lookup_backoff(failed_lookups_so_far: u32) -> Duration {
    Duration::from_secs(1u64 << failed_lookups_so_far.min(6)).min(MAX_LOOKUP_BACKOFF)
}

#[cfg(test)]
mod tests;
