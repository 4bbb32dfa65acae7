//! What the agents and approvers driving operations through the API replicas were
//! answered, held against what the database records: every approval answered and
//! recorded once, every agent's wait answered the operation's final state.

use crate::{approvals_from_rows, Driven, TestFleet};

/// The answers that did not hold.
pub struct Unkept {
    /// Approvals never answered 200.
    pub unapproved: usize,
    /// Approvals answered 200 and not recorded.
    pub approvals_lost: usize,
    /// Approvals recorded twice.
    pub approvals_twice: usize,
    /// Agents' waits that did not answer the final state (nor was the operation
    /// escalated): the operation, what the wait answered, the stored status.
    pub wrong_answers: Vec<(String, Option<String>, &'static str)>,
}

impl Unkept {
    /// Reads the store for each of `driven`, once the fleet has settled.
    pub async fn of(fleet: &TestFleet, driven: &[Driven]) -> Unkept {
        let unapproved = driven.iter().filter(|d| !d.approved).count();
        let (approvals_lost, approvals_twice) = approvals_from_rows(fleet, driven).await;
        let mut wrong_answers = Vec::new();
        for d in driven {
            let row = fleet.row(&d.op).await;
            if d.final_status.as_deref() != Some(row.status.as_str()) && row.escalated_at.is_none()
            {
                wrong_answers.push((d.op.clone(), d.final_status.clone(), row.status.as_str()));
            }
        }
        Unkept {
            unapproved,
            approvals_lost,
            approvals_twice,
            wrong_answers,
        }
    }

    /// Every answer held.
    pub fn assert_none(&self) {
        assert_eq!(self.unapproved, 0, "approvals never answered 200");
        assert_eq!(
            self.approvals_lost, 0,
            "approvals answered 200 and not recorded"
        );
        assert_eq!(self.approvals_twice, 0, "approvals recorded twice");
        assert!(
            self.wrong_answers.is_empty(),
            "agents' waits that did not answer the final state: {:?}",
            self.wrong_answers
        );
    }
}
