//! The `possible_duplicate` cue: a payment that repeats another recent payment of the
//! tenant to the same payee, for the same invoice or of the same amount. An agent that
//! proposes a payment twice (a retried call under a new operation id, two agents working
//! the same invoice) makes two operations that are each correct on their own; only the
//! pair is wrong, and only a person looking at both can tell a second instalment from a
//! mistake. So the second one says so to its approver, and under a policy with a `[risk]`
//! table it needs the extra approvers like any other cue.
//!
//! The other payment counts while it may still pay or has paid: approval pending or
//! approved, not started, in progress, accepted, unknown, succeeded or disputed. A
//! payment that failed, was cancelled (superseded included), rejected or expired paid
//! nothing and is no reason to look twice. Only payments made within
//! [`DUPLICATE_WINDOW`] before this one count: a monthly invoice of the same amount is
//! not a duplicate of last month's.

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

use super::{PaymentAsked, RiskCue};
use crate::approval::ApprovalStatus;
use crate::state::Status;

/// How far back another payment makes this one a possible duplicate: 7 days.
pub const DUPLICATE_WINDOW: TimeDelta = TimeDelta::days(7);

/// Another payment of the tenant to the payee, made within the window (as the store reads
/// it: it may read more, the rule judges).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecentPayment {
    pub operation_id: String,
    pub beneficiary_id: String,
    pub invoice_id: String,
    pub amount_minor: i64,
    pub currency: String,
    pub status: Status,
    pub approval: ApprovalStatus,
    pub created_at: DateTime<Utc>,
}

/// What the payment has in common with the other one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DuplicateOf {
    /// The same invoice id.
    InvoiceId,
    /// The same amount in the same currency.
    Amount,
}

/// Whether `other` may still pay, or has paid.
pub fn may_pay(status: Status, approval: ApprovalStatus) -> bool {
    !matches!(status, Status::Failed | Status::Cancelled)
        && !matches!(approval, ApprovalStatus::Rejected | ApprovalStatus::Expired)
}

/// The `possible_duplicate` cue of `asked` among `recent` at `now`, naming the other
/// payment: the latest one for the same invoice, else the latest one of the same amount.
/// The operation itself and the one it replaces (`supersedes`) are never its duplicate.
pub fn possible_duplicate(
    asked: PaymentAsked<'_>,
    recent: &[RecentPayment],
    now: DateTime<Utc>,
) -> Option<RiskCue> {
    let counted = |p: &&RecentPayment| {
        p.beneficiary_id == asked.beneficiary_id
            && p.operation_id != asked.operation_id
            && Some(p.operation_id.as_str()) != asked.supersedes
            && now.signed_duration_since(p.created_at) <= DUPLICATE_WINDOW
            && may_pay(p.status, p.approval)
    };
    let latest = |same: DuplicateOf| {
        recent
            .iter()
            .filter(counted)
            .filter(|p| match same {
                DuplicateOf::InvoiceId => p.invoice_id == asked.invoice_id,
                DuplicateOf::Amount => {
                    p.amount_minor == asked.amount_minor && p.currency == asked.currency
                }
            })
            .max_by(|a, b| (a.created_at, &a.operation_id).cmp(&(b.created_at, &b.operation_id)))
            .map(|p| RiskCue::PossibleDuplicate {
                operation_id: p.operation_id.clone(),
                same,
            })
    };
    latest(DuplicateOf::InvoiceId).or_else(|| latest(DuplicateOf::Amount))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-12-01T12:00:00Z")
            .unwrap()
            .to_utc()
    }

    fn asked() -> PaymentAsked<'static> {
        PaymentAsked {
            operation_id: "op_new",
            supersedes: None,
            beneficiary_id: "vendor_77",
            invoice_id: "inv_9182",
            amount_minor: 1_250_000,
            currency: "KZT",
        }
    }

    fn other(id: &str, invoice: &str, amount_minor: i64, days_ago: i64) -> RecentPayment {
        RecentPayment {
            operation_id: id.to_owned(),
            beneficiary_id: "vendor_77".to_owned(),
            invoice_id: invoice.to_owned(),
            amount_minor,
            currency: "KZT".to_owned(),
            status: Status::NotStarted,
            approval: ApprovalStatus::Pending,
            created_at: now() - TimeDelta::days(days_ago),
        }
    }

    fn cue(id: &str, same: DuplicateOf) -> Option<RiskCue> {
        Some(RiskCue::PossibleDuplicate {
            operation_id: id.to_owned(),
            same,
        })
    }

    #[test]
    fn the_same_invoice_to_the_same_payee_is_a_possible_duplicate() {
        let recent = [other("op_a", "inv_9182", 99, 2)];
        assert_eq!(
            possible_duplicate(asked(), &recent, now()),
            cue("op_a", DuplicateOf::InvoiceId)
        );
    }

    #[test]
    fn the_same_amount_to_the_same_payee_is_a_possible_duplicate() {
        let recent = [other("op_a", "inv_1", 1_250_000, 2)];
        assert_eq!(
            possible_duplicate(asked(), &recent, now()),
            cue("op_a", DuplicateOf::Amount)
        );
        let mut in_usd = other("op_a", "inv_1", 1_250_000, 2);
        in_usd.currency = "USD".to_owned();
        assert_eq!(possible_duplicate(asked(), &[in_usd], now()), None);
    }

    #[test]
    fn another_payee_another_invoice_and_amount_or_an_older_payment_is_none() {
        let mut to_another = other("op_a", "inv_9182", 1_250_000, 1);
        to_another.beneficiary_id = "vendor_12".to_owned();
        let unrelated = other("op_b", "inv_1", 7, 1);
        let at_the_edge = other("op_c", "inv_9182", 1_250_000, 7);
        let older = RecentPayment {
            created_at: now() - DUPLICATE_WINDOW - TimeDelta::seconds(1),
            ..other("op_d", "inv_9182", 1_250_000, 0)
        };
        assert_eq!(
            possible_duplicate(asked(), &[to_another, unrelated, older], now()),
            None
        );
        assert_eq!(
            possible_duplicate(asked(), &[at_the_edge], now()),
            cue("op_c", DuplicateOf::InvoiceId),
            "seven days ago is within the window"
        );
    }

    #[test]
    fn only_a_payment_that_may_still_pay_or_has_paid_counts() {
        let counted = [
            (Status::NotStarted, ApprovalStatus::Pending),
            (Status::NotStarted, ApprovalStatus::Approved),
            (Status::InProgress, ApprovalStatus::Approved),
            (Status::Accepted, ApprovalStatus::Approved),
            (Status::Unknown, ApprovalStatus::Approved),
            (Status::Succeeded, ApprovalStatus::Approved),
            (Status::Disputed, ApprovalStatus::Approved),
        ];
        let not_counted = [
            (Status::Failed, ApprovalStatus::Approved),
            (Status::Cancelled, ApprovalStatus::Pending),
            (Status::Cancelled, ApprovalStatus::Rejected),
            (Status::NotStarted, ApprovalStatus::Rejected),
            (Status::NotStarted, ApprovalStatus::Expired),
        ];
        for (status, approval) in counted {
            let p = RecentPayment {
                status,
                approval,
                ..other("op_a", "inv_9182", 1, 1)
            };
            assert!(
                possible_duplicate(asked(), &[p], now()).is_some(),
                "{status:?} {approval:?}"
            );
        }
        for (status, approval) in not_counted {
            let p = RecentPayment {
                status,
                approval,
                ..other("op_a", "inv_9182", 1, 1)
            };
            assert_eq!(
                possible_duplicate(asked(), &[p], now()),
                None,
                "{status:?} {approval:?}"
            );
        }
    }

    #[test]
    fn the_operation_itself_and_the_one_it_replaces_are_no_duplicates() {
        let recent = [
            other("op_new", "inv_9182", 1_250_000, 0),
            other("op_old", "inv_9182", 1_250_000, 1),
        ];
        let replacing = PaymentAsked {
            supersedes: Some("op_old"),
            ..asked()
        };
        assert_eq!(possible_duplicate(replacing, &recent, now()), None);
        assert_eq!(
            possible_duplicate(asked(), &recent, now()),
            cue("op_old", DuplicateOf::InvoiceId)
        );
    }

    #[test]
    fn the_same_invoice_wins_over_the_same_amount_and_the_latest_is_named() {
        let recent = [
            other("op_amount", "inv_1", 1_250_000, 0),
            other("op_first", "inv_9182", 5, 3),
            other("op_latest", "inv_9182", 6, 1),
        ];
        assert_eq!(
            possible_duplicate(asked(), &recent, now()),
            cue("op_latest", DuplicateOf::InvoiceId)
        );
    }

    #[test]
    fn the_cue_is_stored_with_the_other_operation_and_what_is_the_same() {
        let cue = cue("op_a", DuplicateOf::Amount).unwrap();
        assert_eq!(
            serde_json::to_value(&cue).unwrap(),
            serde_json::json!({"cue": "possible_duplicate", "operation_id": "op_a", "same": "amount"})
        );
        assert_eq!(
            cue.in_words("KZT"),
            "possible duplicate: op_a, from the last 7 days, pays this payee the same amount"
        );
    }
}
