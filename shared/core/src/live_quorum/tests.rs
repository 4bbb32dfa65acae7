use chrono::{Duration, TimeZone};

use super::*;

fn t(minute: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 1, 1, 12, 0, 0).unwrap() + Duration::minutes(minute)
}

const HASH: &str = "sha256:00";

fn subject(required: i16, signed: i16) -> QuorumSubject<'static> {
    QuorumSubject {
        tenant_id: "acme",
        payload_hash: HASH,
        submitted_by: Some("agent"),
        approvals_required: required,
        signatures_required: signed,
    }
}

fn approval(principal: &str, key: Option<&str>) -> ApprovalFacts {
    ApprovalFacts {
        principal: principal.to_owned(),
        payload_hash: HASH.to_owned(),
        at: t(10),
        key_id: key.map(str::to_owned),
        voided: false,
    }
}

fn approver(principal: &str) -> ApproverStanding {
    ApproverStanding {
        principal: principal.to_owned(),
        role: Role::Approver,
        removed: false,
        tenant_granted_at: Some(t(0)),
    }
}

fn key(id: &str, principal: &str) -> KeyStanding {
    KeyStanding {
        key_id: id.to_owned(),
        principal: principal.to_owned(),
        registered_at: t(1),
        removed: false,
    }
}

#[test]
fn two_live_approvers_make_a_quorum_of_two() {
    let count = live_quorum(
        &subject(2, 0),
        &[approval("alice", None), approval("bob", None)],
        &[approver("alice"), approver("bob")],
        &[],
    );
    assert_eq!(
        count,
        LiveCount {
            counted: 2,
            signed: 0
        }
    );
    assert!(count.meets(&subject(2, 0)));
}

#[test]
fn a_removed_demoted_ungranted_or_voided_approver_does_not_count() {
    let approvals = [approval("alice", None), approval("bob", None)];
    let alice_changes: [fn(&mut ApproverStanding, &mut ApprovalFacts); 5] = [
        |s, _| s.removed = true,
        |s, _| s.role = Role::Admin,
        |s, _| s.tenant_granted_at = None,
        |s, _| s.tenant_granted_at = Some(t(11)),
        |_, a| a.voided = true,
    ];
    for change in alice_changes {
        let (mut alice, mut approvals) = (approver("alice"), approvals.clone());
        change(&mut alice, &mut approvals[0]);
        let count = live_quorum(&subject(2, 0), &approvals, &[alice, approver("bob")], &[]);
        assert_eq!(count.counted, 1);
        assert!(!count.meets(&subject(2, 0)));
    }
}

#[test]
fn the_submitter_another_hash_and_a_stranger_never_count() {
    let mut other_hash = approval("bob", None);
    other_hash.payload_hash = "sha256:11".to_owned();
    let count = live_quorum(
        &subject(1, 0),
        &[approval("agent", None), other_hash, approval("carol", None)],
        &[approver("agent"), approver("bob")],
        &[],
    );
    assert_eq!(count.counted, 0);
}

#[test]
fn only_a_live_key_of_the_approver_registered_before_counts_as_signed() {
    let standings = [approver("alice")];
    let signed = |k: KeyStanding| {
        live_quorum(
            &subject(1, 1),
            &[approval("alice", Some("k"))],
            &standings,
            &[k],
        )
        .signed
    };
    assert_eq!(signed(key("k", "alice")), 1);
    assert_eq!(signed(key("k", "bob")), 0);
    assert_eq!(
        signed(KeyStanding {
            removed: true,
            ..key("k", "alice")
        }),
        0
    );
    assert_eq!(
        signed(KeyStanding {
            registered_at: t(10),
            ..key("k", "alice")
        }),
        0
    );
    assert_eq!(signed(key("other", "alice")), 0);
}
