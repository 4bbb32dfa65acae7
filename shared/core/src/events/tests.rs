use super::*;
use crate::OperationView;
use serde_json::json;

fn event(event_type: EventType, tenant_id: &str) -> OutcomeEvent {
    OutcomeEvent {
        operation_id: "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8".into(),
        key: "9d9bb817477c6881.op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8".into(),
        sequence: 3,
        event_type,
        tenant_id: tenant_id.into(),
        time: "2026-11-29T22:00:00.123456Z".into(),
        data: EventData::Operation(Box::new(OperationEventData {
            view: OperationView {
                status: crate::Status::Succeeded,
                ..crate::view::example()
            },
            sequence: 3,
            approval: None,
        })),
    }
}

#[test]
fn every_type_round_trips_and_has_one_wire_name() {
    let mut names: Vec<&str> = EventType::ALL.iter().map(|t| t.as_str()).collect();
    for t in EventType::ALL {
        assert_eq!(EventType::parse(t.as_str()), Some(t));
        assert_eq!(
            t.cloudevents_type(),
            format!("fleet.operation.{}", t.as_str())
        );
        assert!(
            t.as_str()
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_'),
            "{t:?} must be one routing-key word"
        );
    }
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), EventType::ALL.len());
    assert_eq!(EventType::parse("fleet.operation.succeeded"), None);
}

#[test]
fn a_mandates_events_are_typed_fleet_mandate_and_routed_by_tenant() {
    for t in EventType::MANDATE {
        assert_eq!(EventType::parse(t.as_str()), Some(t));
        assert!(
            !EventType::ALL.contains(&t),
            "{t:?} is no operation's event"
        );
    }
    assert_eq!(
        EventType::MandateUsed.cloudevents_type(),
        "fleet.mandate.used"
    );
    assert_eq!(EventType::MandateUsed.mandate_kind(), Some("used"));
    assert_eq!(EventType::Approved.mandate_kind(), None);
    let e = OutcomeEvent {
        operation_id: "md_01JQ8R7D9M4KX2T3V4W5Y6Z7A8".into(),
        key: "md_01JQ8R7D9M4KX2T3V4W5Y6Z7A8".into(),
        sequence: 2,
        event_type: EventType::MandateRevoked,
        tenant_id: "acme.kz".into(),
        time: "2026-11-29T22:00:00.123456Z".into(),
        data: EventData::Mandate(
            json!({"mandate_id": "md_01JQ8R7D9M4KX2T3V4W5Y6Z7A8", "sequence": 2}),
        ),
    };
    assert_eq!(e.routing_key(), "fleet.mandate.revoked.acme%2Ekz");
    assert_eq!(e.id(), "md_01JQ8R7D9M4KX2T3V4W5Y6Z7A8.2");
    assert_eq!(e.subject(), "acme.kz/md_01JQ8R7D9M4KX2T3V4W5Y6Z7A8");
}

#[test]
fn the_envelope_is_a_structured_cloudevent() {
    let e = event(EventType::Succeeded, "acme");
    let v = e.cloud_event("/fleet/ns1");
    assert_eq!(v["specversion"], "1.0");
    assert_eq!(v["id"], "9d9bb817477c6881.op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8.3");
    assert_eq!(v["source"], "/fleet/ns1");
    assert_eq!(v["type"], "fleet.operation.succeeded");
    assert_eq!(v["subject"], "acme/op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8");
    assert_eq!(v["time"], "2026-11-29T22:00:00.123456Z");
    assert_eq!(v["datacontenttype"], "application/json");
    assert_eq!(v["data"]["sequence"], 3);
    assert_eq!(
        v.as_object().unwrap().len(),
        8,
        "no attribute beyond the documented ones: {v}"
    );
    let parsed: serde_json::Value = serde_json::from_slice(&e.to_bytes("/fleet/ns1")).unwrap();
    assert_eq!(parsed, v);
}

#[test]
fn the_id_is_stable_and_differs_per_sequence() {
    let a = event(EventType::Succeeded, "acme");
    assert_eq!(a.id(), a.clone().id());
    let b = OutcomeEvent {
        sequence: 4,
        ..a.clone()
    };
    assert_ne!(a.id(), b.id());
    // Another tenant's operation with the same id and sequence is another event.
    let other_tenant = OutcomeEvent {
        key: "0123456789abcdef.op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8".into(),
        tenant_id: "org_999".into(),
        ..a.clone()
    };
    assert_ne!(a.id(), other_tenant.id());
}

#[test]
fn routing_keys_are_type_then_tenant() {
    assert_eq!(
        event(EventType::Succeeded, "acme").routing_key(),
        "fleet.operation.succeeded.acme"
    );
    assert_eq!(
        event(EventType::ApprovalExpired, "org_7-b").routing_key(),
        "fleet.operation.approval_expired.org_7-b"
    );
}

#[test]
fn tenant_dots_wildcards_and_unicode_stay_inside_one_word() {
    assert_eq!(tenant_segment("acme.kz"), "acme%2Ekz");
    assert_eq!(tenant_segment("a*b#c"), "a%2Ab%23c");
    assert_eq!(tenant_segment("50%"), "50%25");
    assert_eq!(tenant_segment("a b"), "a%20b");
    assert_eq!(tenant_segment("Қаз"), "%D2%9A%D0%B0%D0%B7");
    for tenant in ["acme.kz", "a*b#c", "x.y.z", "~tilde", "Қаз"] {
        let segment = tenant_segment(tenant);
        assert!(
            !segment.contains(['.', '*', '#', '~']),
            "{tenant} → {segment}"
        );
    }
}

#[test]
fn distinct_tenants_get_distinct_segments() {
    let tenants = [
        "acme",
        "acme.kz",
        "acme%2Ekz",
        "acme_kz",
        "ACME",
        "a.b",
        "a%2Eb",
    ];
    let mut segments: Vec<String> = tenants.iter().map(|t| tenant_segment(t)).collect();
    segments.sort();
    segments.dedup();
    assert_eq!(segments.len(), tenants.len());
}

#[test]
fn a_long_tenant_is_replaced_by_its_digest_and_the_key_fits_amqp() {
    let short = "t".repeat(MAX_TENANT_SEGMENT);
    assert_eq!(tenant_segment(&short), short);
    let long = ".".repeat(256); // 768 bytes once encoded
    let segment = tenant_segment(&long);
    assert!(segment.starts_with('~') && segment.len() == 33, "{segment}");
    assert_ne!(segment, tenant_segment(&".".repeat(255)));
    for t in EventType::ALL {
        let key = OutcomeEvent {
            event_type: t,
            ..event(t, &long)
        }
        .routing_key();
        assert!(key.len() <= 255, "{key}");
        let key = OutcomeEvent {
            event_type: t,
            ..event(t, &"é".repeat(128))
        }
        .routing_key();
        assert!(key.len() <= 255, "{key}");
    }
}

#[test]
fn the_source_names_the_namespace() {
    assert_eq!(source(""), "/fleet");
    assert_eq!(source("t01abc"), "/fleet/t01abc");
    assert_eq!(source("a b"), "/fleet/a%20b");
}

#[test]
fn the_subject_names_the_tenant_and_the_operation_split_at_the_last_slash() {
    assert_eq!(
        event(EventType::Succeeded, "org_482").subject(),
        "org_482/op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8"
    );
    // A tenant id may hold a slash; an operation id never does.
    let subject = event(EventType::Succeeded, "acme/kz").subject();
    assert_eq!(
        subject.rsplit_once('/'),
        Some(("acme/kz", "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8"))
    );
}

#[test]
fn a_traced_event_carries_the_traceparent_attribute_and_an_untraced_one_none() {
    let e = event(EventType::Succeeded, "acme");
    let tp = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
    let traced: Value = serde_json::from_slice(&e.to_bytes_traced("/fleet", Some(&tp))).unwrap();
    assert_eq!(traced[TRACEPARENT_ATTRIBUTE], tp.to_string());
    let plain: Value = serde_json::from_slice(&e.to_bytes("/fleet")).unwrap();
    assert!(plain.get(TRACEPARENT_ATTRIBUTE).is_none());
    assert_eq!(plain, e.cloud_event("/fleet"));
}

/// An approval's event as the outbox trigger writes it: the view, `sequence`, `approval`.
fn approved_data() -> Value {
    let mut data = crate::view::example().to_json();
    let members = data.as_object_mut().unwrap();
    members.insert("sequence".into(), json!(2));
    members.insert(
        "approval".into(),
        json!({"by": "ann", "signed": true, "signed_in_with": "oidc"}),
    );
    data
}

#[test]
fn an_operations_event_data_reads_into_the_view_and_is_written_back_unchanged() {
    let json = approved_data();
    let EventData::Operation(read) = EventData::read(EventType::Approved, json.clone()).unwrap()
    else {
        panic!("an operation's event");
    };
    assert_eq!(read.view, crate::view::example());
    assert_eq!(read.sequence, 2);
    assert_eq!(
        read.approval,
        Some(EventApproval {
            by: "ann".into(),
            signed: true,
            signed_in_with: Some("oidc".into()),
        })
    );
    assert_eq!(read.to_json(), json);
    let through_serde: OperationEventData = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(serde_json::to_value(&through_serde).unwrap(), json);
}

#[test]
fn an_operations_event_data_with_a_member_nobody_knows_is_refused_by_name() {
    let refused = |data: Value| {
        EventData::read(EventType::Approved, data)
            .unwrap_err()
            .member
    };
    let mut extra = approved_data();
    extra["colour"] = json!("blue");
    assert_eq!(refused(extra), "colour");
    let mut in_approval = approved_data();
    in_approval["approval"]["weight"] = json!(2);
    assert_eq!(refused(in_approval), "approval.weight");
    let mut no_sequence = approved_data();
    no_sequence.as_object_mut().unwrap().remove("sequence");
    assert_eq!(refused(no_sequence), "sequence");
    let mut zero = approved_data();
    zero["sequence"] = json!(0);
    assert_eq!(refused(zero), "sequence");
    let mut mistyped = approved_data();
    mistyped["status"] = json!("paid");
    assert_eq!(refused(mistyped), "status");
}

#[test]
fn a_mandates_event_data_is_carried_as_it_is() {
    let data = json!({"mandate_id": "md_1", "sequence": 1, "event": {"kind": "created"}});
    let read = EventData::read(EventType::MandateCreated, data.clone()).unwrap();
    assert_eq!(read, EventData::Mandate(data.clone()));
    assert_eq!(read.operation(), None);
    assert_eq!(read.to_json(), data);
}

#[test]
fn the_published_bytes_are_those_of_the_stored_json() {
    let stored = approved_data();
    let mut e = event(EventType::Approved, "acme");
    e.data = EventData::read(EventType::Approved, stored.clone()).unwrap();
    let published: Value = serde_json::from_slice(&e.to_bytes("/fleet")).unwrap();
    assert_eq!(published["data"], stored);
    let mut raw = e.cloud_event("/fleet");
    raw["data"] = stored;
    assert_eq!(e.to_bytes("/fleet"), serde_json::to_vec(&raw).unwrap());
}

/// The envelope as it was written before it was written member by member: the
/// `cloud_event` value, `traceparent` added, through `serde_json`.
fn envelope_bytes_through_a_value(
    e: &OutcomeEvent,
    source: &str,
    traceparent: Option<&TraceParent>,
) -> Vec<u8> {
    let mut event = e.cloud_event(source);
    if let Some(tp) = traceparent {
        event[TRACEPARENT_ATTRIBUTE] = tp.to_string().into();
    }
    serde_json::to_vec(&event).unwrap()
}

#[test]
fn the_envelope_written_member_by_member_is_the_value_written_by_serde_json() {
    let tp = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
    let mandate =
        json!({"mandate_id": "md_1", "sequence": 2, "event": {"kind": "used", "by": "é\"\n"}});
    for tenant in [
        "acme",
        "a\"b\\c",
        "line\nbreak\u{1}",
        "ünï/cødé",
        "emoji 🦀 tab\t",
    ] {
        for t in EventType::ALL.into_iter().chain(EventType::MANDATE) {
            let mut e = event(t, tenant);
            if t.mandate_kind().is_some() {
                e.data = EventData::read(t, mandate.clone()).unwrap();
            } else if t == EventType::Approved {
                e.data = EventData::read(t, approved_data()).unwrap();
            }
            for source in ["/fleet", "/fleet/n%2Es"] {
                for traceparent in [None, Some(&tp)] {
                    assert_eq!(
                        e.to_bytes_traced(source, traceparent),
                        envelope_bytes_through_a_value(&e, source, traceparent),
                        "{tenant:?} {t:?} {source} {traceparent:?}"
                    );
                }
            }
            let spelt = match t.mandate_kind() {
                Some(kind) => format!("{MANDATE_TYPE_PREFIX}{kind}"),
                None => format!("{TYPE_PREFIX}{}", t.as_str()),
            };
            assert_eq!(t.cloudevents_type_str(), spelt);
        }
    }
}
