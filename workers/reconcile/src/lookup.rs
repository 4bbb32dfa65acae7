//! Asking the provider, read-only: by the external id we know (strongly consistent), else
//! by our reference (eventually consistent, bounded by the provider's search lag).

use fleet_core::reconcile::{Found, Lookup};
use fleet_core::Action;
use fleet_providers::{LookupError, PaymentsClient};
use fleet_store::OperationRow;
use serde_json::{json, Value};

pub struct LookupOutcome {
    pub lookup: Lookup,
    /// What was asked and what came back (ids only), for the operation's history.
    pub evidence: Value,
}

fn failed(via: &str, e: &LookupError) -> LookupOutcome {
    LookupOutcome { lookup: Lookup::Failed, evidence: json!({"via": via, "error": e.to_string()}) }
}

fn matches(via: &str, objects: &[Value], reference: &str) -> LookupOutcome {
    // Only objects that carry this operation's reference count: a search result for
    // something else must never settle it.
    let ours: Vec<&Value> = objects.iter().filter(|o| o.get("reference").and_then(Value::as_str) == Some(reference)).collect();
    let found: Option<Vec<Found>> = ours.iter().map(|o| Found::from_object(o)).collect();
    let ids: Vec<&str> = ours.iter().filter_map(|o| o.get("id").and_then(Value::as_str)).collect();
    match found {
        Some(found) => LookupOutcome { lookup: Lookup::Matches(found), evidence: json!({"via": via, "found": ids}) },
        None => LookupOutcome { lookup: Lookup::Failed, evidence: json!({"via": via, "found": ids, "error": "unreadable object"}) },
    }
}

pub async fn look_up(payments: &PaymentsClient, row: &OperationRow, external_id: Option<&str>) -> LookupOutcome {
    let refund = Action::parse(&row.action) == Some(Action::RefundCreate);
    let reference = row.operation_id.as_str();
    if let Some(id) = external_id {
        let by_id = if refund { payments.get_refund(id).await } else { payments.get_payment(id).await };
        match by_id {
            Ok(Some(object)) => return matches("external_id", &[object], reference),
            // Not there by id: fall back to the search, which decides with the lag rules.
            Ok(None) => {}
            Err(e) => return failed("external_id", &e),
        }
    }
    let search = if refund { payments.find_refunds_by_reference(reference).await } else { payments.find_payments_by_reference(reference).await };
    match search {
        Ok(objects) => matches("reference", &objects, reference),
        Err(e) => failed("reference", &e),
    }
}
