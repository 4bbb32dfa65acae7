use serde_json::{json, Value};

use super::*;

/// A view as `operation_view` writes one: the example, succeeded, with its payee evidence,
/// a risk cue and its confirmation.
fn succeeded() -> Value {
    let mut view = example().to_json();
    for (member, value) in [
        (
            "payee",
            json!({
                "status": "found", "id": "ben_1", "name": "Acme GmbH", "country": "DE",
                "account": {"scheme": "iban", "masked": "DE•• 1234", "fingerprint": format!("sha256:{}", "cd".repeat(32))},
                "verified": true, "version": 2,
                "looked_up_at": "2026-03-01T09:29:59.123456789Z",
                "name_check": {"result": "close_match", "asked": "ACME", "held": "Acme GmbH"}
            }),
        ),
        (
            "risk",
            json!([{"cue": "amount_above_usual", "multiple": 3, "median_minor": 400}]),
        ),
        ("status", json!("succeeded")),
        ("external_id", json!("pay_9")),
        (
            "confirmation",
            json!({"by": "answer", "object_id": "pay_9", "fence": 1, "provider_request_id": null}),
        ),
        ("approval_status", json!("approved")),
        ("approvals_required", json!(2)),
        ("approvals_received", json!(2)),
        ("decided_by", json!("alice")),
        ("decided_at", json!("2026-03-01T09:31:00.500000Z")),
        ("created_at", json!("2026-03-01T09:30:00.000001Z")),
    ] {
        view[member] = value;
    }
    view
}

#[test]
fn a_view_reads_and_writes_back_unchanged() {
    let view = OperationView::from_json(succeeded()).unwrap();
    assert_eq!(view.status, Status::Succeeded);
    assert_eq!(view.quorum(), "2/2");
    assert_eq!(view.to_json(), succeeded());
}

#[test]
fn an_unknown_or_missing_member_is_refused_by_name() {
    let mut more = succeeded();
    more["extra"] = json!(1);
    let e = OperationView::from_json(more).unwrap_err();
    assert!(e.problem.contains("extra"), "{e}");

    let mut less = succeeded();
    less.as_object_mut().unwrap().remove("escalated");
    assert!(OperationView::from_json(less).is_err());

    let mut deeper = succeeded();
    deeper["confirmation"]["extra"] = json!(1);
    assert_eq!(
        OperationView::from_json(deeper).unwrap_err().member,
        "confirmation"
    );
}

#[test]
fn names_and_times_are_checked_as_core_writes_them() {
    for (member, bad) in [
        ("status", json!("done")),
        ("approval_status", json!("maybe")),
        ("created_at", json!("2026-03-01T09:30:00Z")),
        ("operation_id", json!("op_1")),
        ("payload_hash", json!("sha256:AB")),
    ] {
        let mut view = succeeded();
        view[member] = bad;
        let e = OperationView::from_json(view).unwrap_err();
        assert_eq!(e.member, member, "{e}");
    }
}

#[test]
fn the_example_is_a_pending_view() {
    let view = example();
    assert_eq!(view.approval_status, ApprovalStatus::Pending);
    assert_eq!(OperationView::from_json(view.to_json()).unwrap(), view);
}

#[test]
fn a_view_says_what_decides_a_wait() {
    let mut v = succeeded();
    v["status"] = json!("unknown");
    v["escalated"] = json!(true);
    v["confirmation"] = Value::Null;
    let view = OperationView::from_json(v).unwrap();
    assert_eq!(
        view.wait_state(),
        WaitState {
            status: Status::Unknown,
            approval: ApprovalStatus::Approved,
            escalated: true
        }
    );
}
