use super::*;

const CLEAR: AtCall = AtCall {
    payer: Payer::AsApproved,
    mandate_revoked: false,
    lease_stalled: false,
};

/// A claim with nothing against it: hash intact, no signature or mandate asked for, a
/// request built, a first attempt.
const FACTS: PreCallFacts = PreCallFacts {
    snapshot_hash_matches: true,
    signatures_hold: None,
    mandate_holds: None,
    call_buildable: true,
    key_trusted_for_resend: None,
    at_call: Some(CLEAR),
};

fn escalate(reason: Reason, outcome: AttemptOutcome) -> Gate {
    Gate::Escalate { reason, outcome }
}

#[test]
fn every_check_decides_as_its_row_says() {
    let at = |at_call: AtCall| PreCallFacts {
        at_call: Some(at_call),
        ..FACTS
    };
    let table: [(&str, PreCallFacts, Gate); 14] = [
        ("nothing against it", FACTS, Gate::Go),
        (
            "signatures and a mandate that hold, a trusted key",
            PreCallFacts {
                signatures_hold: Some(true),
                mandate_holds: Some(true),
                key_trusted_for_resend: Some(true),
                ..FACTS
            },
            Gate::Go,
        ),
        (
            "snapshot edited",
            PreCallFacts {
                snapshot_hash_matches: false,
                ..FACTS
            },
            escalate(Reason::SnapshotHashMismatch, AttemptOutcome::Unknown),
        ),
        (
            "signatures do not hold",
            PreCallFacts {
                signatures_hold: Some(false),
                ..FACTS
            },
            escalate(
                Reason::ApprovalSignatureInvalid,
                AttemptOutcome::NotExecuted,
            ),
        ),
        (
            "mandate does not hold",
            PreCallFacts {
                mandate_holds: Some(false),
                ..FACTS
            },
            escalate(
                Reason::ApprovalSignatureInvalid,
                AttemptOutcome::NotExecuted,
            ),
        ),
        (
            "request cannot be built",
            PreCallFacts {
                call_buildable: false,
                ..FACTS
            },
            escalate(Reason::UnbuildableRequest, AttemptOutcome::Unknown),
        ),
        (
            "key past its retention",
            PreCallFacts {
                key_trusted_for_resend: Some(false),
                ..FACTS
            },
            escalate(Reason::KeyRetentionPassed, AttemptOutcome::NotExecuted),
        ),
        (
            "payer unreadable",
            at(AtCall {
                payer: Payer::Unreadable,
                ..CLEAR
            }),
            Gate::PayerCheck,
        ),
        (
            "payer changed",
            at(AtCall {
                payer: Payer::Changed,
                ..CLEAR
            }),
            Gate::PayerCheck,
        ),
        (
            "mandate revoked before its hold",
            at(AtCall {
                mandate_revoked: true,
                ..CLEAR
            }),
            Gate::NotExecuted(Reason::MandateRevoked),
        ),
        (
            "lease stalled",
            at(AtCall {
                lease_stalled: true,
                ..CLEAR
            }),
            Gate::Stalled,
        ),
        (
            "nothing learnt at the call",
            PreCallFacts {
                at_call: None,
                ..FACTS
            },
            Gate::Stalled,
        ),
        (
            "a payer changed outranks a revoked mandate and a stall",
            at(AtCall {
                payer: Payer::Changed,
                mandate_revoked: true,
                lease_stalled: true,
            }),
            Gate::PayerCheck,
        ),
        (
            "a revoked mandate outranks a stall",
            at(AtCall {
                mandate_revoked: true,
                lease_stalled: true,
                ..CLEAR
            }),
            Gate::NotExecuted(Reason::MandateRevoked),
        ),
    ];
    for (name, facts, expected) in table {
        assert_eq!(gate(&facts), expected, "{name}");
    }
}

#[test]
fn the_checks_are_read_in_order_of_authority() {
    // Each check fails together with every check after it: the first one decides.
    let all_fail = PreCallFacts {
        snapshot_hash_matches: false,
        signatures_hold: Some(false),
        mandate_holds: Some(false),
        call_buildable: false,
        key_trusted_for_resend: Some(false),
        at_call: None,
    };
    let mut facts = all_fail;
    let mut seen = vec![gate(&facts)];
    facts.snapshot_hash_matches = true;
    seen.push(gate(&facts));
    facts.signatures_hold = None;
    seen.push(gate(&facts));
    facts.mandate_holds = Some(true);
    seen.push(gate(&facts));
    facts.call_buildable = true;
    seen.push(gate(&facts));
    assert_eq!(
        seen,
        [
            escalate(Reason::SnapshotHashMismatch, AttemptOutcome::Unknown),
            escalate(
                Reason::ApprovalSignatureInvalid,
                AttemptOutcome::NotExecuted
            ),
            escalate(
                Reason::ApprovalSignatureInvalid,
                AttemptOutcome::NotExecuted
            ),
            escalate(Reason::UnbuildableRequest, AttemptOutcome::Unknown),
            escalate(Reason::KeyRetentionPassed, AttemptOutcome::NotExecuted),
        ]
    );
}

#[test]
fn what_is_learnt_at_the_call_is_asked_only_once_the_checks_clear() {
    assert!(FACTS.checks_clear());
    let held = PreCallFacts {
        key_trusted_for_resend: Some(false),
        at_call: Some(AtCall {
            lease_stalled: true,
            ..CLEAR
        }),
        ..FACTS
    };
    assert!(!held.checks_clear());
    // A check that holds the call back wins over anything learnt at the call.
    assert_eq!(
        gate(&held),
        escalate(Reason::KeyRetentionPassed, AttemptOutcome::NotExecuted)
    );
}
