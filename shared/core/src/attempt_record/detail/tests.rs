use super::*;

#[test]
fn every_detail_reads_back_as_written() {
    let details = [
        (
            AttemptOutcome::Failed,
            AttemptDetail::Refused {
                code: "account_closed".into(),
            },
        ),
        (
            AttemptOutcome::Unknown,
            AttemptDetail::Because {
                reason: Reason::BeneficiaryChangedAfterUncertainAttempt,
            },
        ),
        (
            AttemptOutcome::NotExecuted,
            AttemptDetail::Because {
                reason: Reason::Http(429),
            },
        ),
        (
            AttemptOutcome::VersionConflict,
            AttemptDetail::Conflict {
                on: Precondition::Payee,
                current: Some("****4321 (fp_1)".into()),
            },
        ),
        (
            AttemptOutcome::StatusConflict,
            AttemptDetail::Conflict {
                on: Precondition::Status,
                current: None,
            },
        ),
        (
            AttemptOutcome::NotExecuted,
            AttemptDetail::LeaseLostBeforeCall,
        ),
        (
            AttemptOutcome::NotExecuted,
            AttemptDetail::PayerLookupFailed,
        ),
        (AttemptOutcome::Succeeded, AttemptDetail::FoundBySearch),
        (
            AttemptOutcome::NotExecuted,
            AttemptDetail::NotSent {
                why: "lease_lost_fenced_out".into(),
            },
        ),
        (
            AttemptOutcome::VersionConflict,
            AttemptDetail::Words {
                text: "payer changed after approval: ****4242 → unreadable; nothing was sent"
                    .into(),
            },
        ),
    ];
    for (outcome, detail) in details {
        let text = detail.to_text();
        assert_eq!(AttemptDetail::read(Some(outcome), &text), detail, "{text}");
        let json = serde_json::to_value(&detail).unwrap();
        assert!(json["kind"].is_string(), "{json}");
        assert_eq!(
            serde_json::from_value::<AttemptDetail>(json).unwrap(),
            detail
        );
    }
}

#[test]
fn the_forms_written_before_the_type_are_read() {
    let read = |outcome, text: &str| AttemptDetail::read(outcome, text);
    assert_eq!(
        read(Some(AttemptOutcome::Failed), "insufficient_funds").refusal_code(),
        Some("insufficient_funds")
    );
    // A failed attempt's detail is its code, whatever it looks like.
    assert_eq!(
        read(Some(AttemptOutcome::Failed), "http_404").refusal_code(),
        Some("http_404")
    );
    assert_eq!(
        read(
            Some(AttemptOutcome::Unknown),
            "beneficiary_changed_after_uncertain_attempt"
        )
        .reason(),
        Some(Reason::BeneficiaryChangedAfterUncertainAttempt)
    );
    assert_eq!(
        read(
            Some(AttemptOutcome::NotExecuted),
            "not sent: the claim was lost before its request was sent"
        ),
        AttemptDetail::NotSent {
            why: "the claim was lost before its request was sent".into()
        }
    );
    assert_eq!(
        read(
            Some(AttemptOutcome::VersionConflict),
            "version_conflict current=7"
        ),
        AttemptDetail::Conflict {
            on: Precondition::Version,
            current: Some("7".into())
        }
    );
    let words = "payee changed after approval: version 1 → 2, account ****4321 (fp_9)";
    assert_eq!(
        read(Some(AttemptOutcome::VersionConflict), words),
        AttemptDetail::Words { text: words.into() }
    );
    // An attempt that never finished reads its detail the same way.
    assert_eq!(
        read(None, "lease_lost_before_call"),
        AttemptDetail::LeaseLostBeforeCall
    );
    assert_eq!(read(None, "found_by_search"), AttemptDetail::FoundBySearch);
    assert_eq!(read(None, "payer_lookup_failed").reason(), None);
}

#[test]
fn an_unknown_code_in_the_json_form_is_refused() {
    let bad = serde_json::json!({"kind": "because", "reason": "no_such_reason"});
    assert!(serde_json::from_value::<AttemptDetail>(bad).is_err());
}
