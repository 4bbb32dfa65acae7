//! The lookup most actions make: a search by our reference at the provider, whose answer
//! counts only the objects that carry it.

use serde_json::{json, Value};

use crate::action_spec::Subject;
use crate::lookup::{Found, Lookup, Reading};

/// Reads what a search by our reference (or a read by the effect's id) returned: only
/// objects whose `reference_field` is this operation's id count (a search result for
/// something else must never settle it), each read by `found`. An object that cannot be
/// read makes the whole lookup inconclusive.
pub fn read_search(
    subject: &Subject<'_>,
    via: &str,
    objects: &[Value],
    reference_field: &str,
    found: fn(&Value) -> Option<Found>,
) -> Reading {
    let ours = objects
        .iter()
        .filter(|o| o.get(reference_field).and_then(Value::as_str) == Some(subject.reference));
    read_ours(via, ours, found)
}

/// Reads the objects a lookup found to be this operation's (by whatever mark the provider
/// keeps): each read by `found`; one that cannot be read makes the lookup inconclusive.
/// The evidence names the lookup (`via`) and the ids found.
pub fn read_ours<'a>(
    via: &str,
    ours: impl Iterator<Item = &'a Value>,
    found: impl Fn(&Value) -> Option<Found>,
) -> Reading {
    let ours: Vec<&Value> = ours.collect();
    let ids: Vec<&str> = ours
        .iter()
        .filter_map(|o| o.get("id").and_then(Value::as_str))
        .collect();
    match ours
        .iter()
        .map(|o| found(o))
        .collect::<Option<Vec<Found>>>()
    {
        Some(found) => Reading {
            lookup: Lookup::Matches(found),
            evidence: json!({"via": via, "found": ids}),
        },
        None => Reading {
            lookup: Lookup::Failed,
            evidence: json!({"via": via, "found": ids, "error": "unreadable object"}),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_counts_only_objects_with_our_reference() {
        let payload = json!({});
        let subject = Subject {
            reference: "op_A",
            target: None,
            payload: &payload,
        };
        let objects = [
            json!({"id": "pay_1", "status": "succeeded", "reference": "op_A"}),
            json!({"id": "pay_2", "status": "succeeded", "reference": "op_B"}),
        ];
        let read = read_search(
            &subject,
            "reference",
            &objects,
            "reference",
            Found::from_object,
        );
        assert_eq!(
            read.lookup,
            Lookup::Matches(vec![Found::Succeeded {
                external_id: "pay_1".into()
            }])
        );
        assert_eq!(
            read.evidence,
            json!({"via": "reference", "found": ["pay_1"]})
        );
        let odd = [json!({"id": "pay_3", "status": "weird", "reference": "op_A"})];
        assert_eq!(
            read_search(&subject, "reference", &odd, "reference", Found::from_object).lookup,
            Lookup::Failed
        );
    }
}
