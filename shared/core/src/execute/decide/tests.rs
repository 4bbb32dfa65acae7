use super::*;

fn approved() -> ExecuteFacts {
    ExecuteFacts::CLAIMABLE
}

#[test]
fn an_approved_intact_row_is_claimed() {
    assert_eq!(decide(approved()), Decision::Claim);
}

#[test]
fn approval_problems_cancel_without_a_call() {
    let expired = ExecuteFacts {
        approval_expired: true,
        ..approved()
    };
    assert_eq!(decide(expired), Decision::Cancel(Reason::ApprovalExpired));
    let rejected = ExecuteFacts {
        approval: ApprovalStatus::Rejected,
        ..approved()
    };
    assert_eq!(decide(rejected), Decision::Cancel(Reason::ApprovalRejected));
    let marked_expired = ExecuteFacts {
        approval: ApprovalStatus::Expired,
        ..approved()
    };
    assert_eq!(
        decide(marked_expired),
        Decision::Cancel(Reason::ApprovalExpired)
    );
    let pending_past_its_window = ExecuteFacts {
        approval: ApprovalStatus::Pending,
        approval_expired: true,
        approved_hash_matches: false,
        ..approved()
    };
    assert_eq!(
        decide(pending_past_its_window),
        Decision::Cancel(Reason::ApprovalExpired)
    );
    let outdated = ExecuteFacts {
        policy_current: false,
        ..approved()
    };
    assert_eq!(decide(outdated), Decision::Cancel(Reason::PolicyOutdated));
}

#[test]
fn a_snapshot_that_no_longer_matches_its_approval_is_escalated_never_cancelled() {
    let edited = ExecuteFacts {
        snapshot_hash_matches: false,
        ..approved()
    };
    assert_eq!(
        decide(edited),
        Decision::Escalate(Reason::SnapshotHashMismatch)
    );
    let other_hash_approved = ExecuteFacts {
        approved_hash_matches: false,
        ..approved()
    };
    assert_eq!(
        decide(other_hash_approved),
        Decision::Escalate(Reason::ApprovedHashMismatch)
    );
    // Even with its policy out of force: tampering is a person's business first.
    let both = ExecuteFacts {
        snapshot_hash_matches: false,
        policy_current: false,
        ..approved()
    };
    assert_eq!(
        decide(both),
        Decision::Escalate(Reason::SnapshotHashMismatch)
    );
}

#[test]
fn an_escalated_row_is_left_to_a_person_whatever_its_status() {
    for status in Status::ALL {
        for approval in ApprovalStatus::ALL {
            let f = ExecuteFacts {
                status,
                approval,
                escalated: true,
                approval_expired: true,
                lease_expired: true,
                snapshot_hash_matches: false,
                ..approved()
            };
            assert_eq!(decide(f), Decision::Nothing, "{f:?}");
        }
    }
}

#[test]
fn pending_rows_wait_and_others_are_left_alone_or_sent_to_reconcile() {
    let pending = ExecuteFacts {
        approval: ApprovalStatus::Pending,
        approved_hash_matches: false,
        ..approved()
    };
    assert_eq!(decide(pending), Decision::Nothing);
    let held = ExecuteFacts {
        status: Status::InProgress,
        ..approved()
    };
    assert_eq!(decide(held), Decision::Nothing);
    let lease_expired = ExecuteFacts {
        lease_expired: true,
        ..held
    };
    assert_eq!(decide(lease_expired), Decision::RingReconcile);
    let unknown = ExecuteFacts {
        status: Status::Unknown,
        ..lease_expired
    };
    assert_eq!(decide(unknown), Decision::RingReconcile);
    for status in [
        Status::Accepted,
        Status::Succeeded,
        Status::Failed,
        Status::Cancelled,
        Status::Disputed,
    ] {
        let f = ExecuteFacts {
            status,
            ..lease_expired
        };
        assert_eq!(decide(f), Decision::Nothing, "{status}");
    }
}

#[test]
fn only_a_not_started_row_is_ever_claimed_cancelled_or_escalated() {
    for status in Status::ALL {
        for approval in ApprovalStatus::ALL {
            for flags in 0u8..32 {
                let f = ExecuteFacts {
                    status,
                    approval,
                    escalated: false,
                    approval_expired: flags & 1 != 0,
                    lease_expired: flags & 2 != 0,
                    approved_hash_matches: flags & 4 != 0,
                    snapshot_hash_matches: flags & 8 != 0,
                    policy_current: flags & 16 != 0,
                };
                match decide(f) {
                    Decision::Claim => assert!(
                        status == Status::NotStarted
                            && approval == ApprovalStatus::Approved
                            && !f.approval_expired
                            && f.approved_hash_matches
                            && f.snapshot_hash_matches
                            && f.policy_current,
                        "{f:?}"
                    ),
                    Decision::Cancel(_) | Decision::Escalate(_) => {
                        assert_eq!(status, Status::NotStarted, "{f:?}")
                    }
                    Decision::RingReconcile => assert!(
                        status == Status::Unknown
                            || (status == Status::InProgress && f.lease_expired),
                        "{f:?}"
                    ),
                    Decision::Nothing => {}
                }
            }
        }
    }
}

#[test]
fn no_accepted_policies_means_every_version_is_current() {
    assert!(policy_current(&[], "payments-v3"));
    assert!(policy_current(&["payments-v3".into()], "payments-v3"));
    assert!(!policy_current(&["payments-v4".into()], "payments-v3"));
}
