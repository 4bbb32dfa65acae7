//! The database publishes the event core says: `outcome_event_type`, the SQL function the
//! outbox trigger applies to every history row, against `fleet_core::EventType::of`, for
//! every combination of kind, status, actor and reason: every reason core names
//! (`Reason::ALL`, and samples of the HTTP families), none, and strangers.

use fleet_core::events::EventType;
use fleet_core::history::HistoryKind;
use fleet_core::{Reason, Status};
use fleet_tests::TestFleet;

#[tokio::test]
async fn the_outbox_trigger_and_core_map_every_history_row_to_the_same_event() {
    let fleet = TestFleet::start().await;
    let mut kinds: Vec<&str> = HistoryKind::ALL.iter().map(|k| k.as_str()).collect();
    kinds.push("a_kind_nobody_writes");
    let mut statuses: Vec<Option<&str>> = Status::ALL.iter().map(|s| Some(s.as_str())).collect();
    statuses.push(None);
    let actors = [
        "prepare",
        "execute",
        "reconcile",
        "webhook-ingest",
        "approver",
        "approver:alice",
        "operator:ops",
    ];
    let mut reasons: Vec<Option<&str>> = Reason::ALL.iter().map(|r| Some(r.as_str())).collect();
    for http in [
        Reason::Http(429),
        Reason::Http(503),
        Reason::HttpReplayed(500),
    ] {
        reasons.push(Some(http.as_str()));
    }
    // Names core never writes: the database must read them as it reads no reason.
    reasons.extend([None, Some("hash_mismatch"), Some("Approval_Rejected")]);
    let (mut k, mut s, mut a, mut r) = (vec![], vec![], vec![], vec![]);
    for kind in &kinds {
        for status in &statuses {
            for actor in actors {
                for &reason in &reasons {
                    k.push(kind.to_string());
                    s.push(status.map(str::to_owned));
                    a.push(actor.to_owned());
                    r.push(reason.map(str::to_owned));
                }
            }
        }
    }
    let rows = fleet
        .store
        .pooled_session()
        .await
        .unwrap()
        .query(
            "SELECT outcome_event_type(k, s, a, r)
             FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS t(k, s, a, r, n)
             ORDER BY n",
            &[&k, &s, &a, &r],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), k.len());
    let mut differing = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let in_sql: Option<String> = row.get(0);
        let in_core = HistoryKind::parse(&k[i]).and_then(|kind| {
            EventType::of(
                kind,
                s[i].as_deref().and_then(Status::parse),
                &a[i],
                r[i].as_deref().and_then(Reason::parse),
            )
        });
        if in_sql.as_deref() != in_core.map(EventType::as_str) {
            differing.push(format!(
                "{}/{:?}/{}/{:?}: sql {in_sql:?}, core {in_core:?}",
                k[i], s[i], a[i], r[i]
            ));
        }
    }
    assert!(
        differing.is_empty(),
        "{} of {} rows differ, e.g. {:?}",
        differing.len(),
        k.len(),
        &differing[..differing.len().min(5)]
    );
    fleet.stop().await;
}
