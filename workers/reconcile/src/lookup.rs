//! Asking the provider, read-only: by the external id we know (strongly consistent), else
//! by our reference (eventually consistent, bounded by the provider's search lag).

use fleet_core::reconcile::{Found, Lookup};
use fleet_core::Action;
use fleet_providers::{CrmClient, LookupError, PaymentsClient};
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

/// The read-only clients reconcile asks.
pub struct Providers {
    pub payments: PaymentsClient,
    pub crm: CrmClient,
}

pub async fn look_up(providers: &Providers, row: &OperationRow, external_id: Option<&str>) -> LookupOutcome {
    match Action::parse(&row.action) {
        Some(Action::PaymentCreate) | None => look_up_payment(&providers.payments, row, external_id, false).await,
        Some(Action::RefundCreate) => look_up_payment(&providers.payments, row, external_id, true).await,
        Some(Action::CrmDealCreate) => look_up_deal_create(&providers.crm, row).await,
        Some(Action::CrmDealUpdate) => look_up_deal_update(&providers.crm, row).await,
    }
}

/// Deals carry no status: a deal with our external id IS the effect.
async fn look_up_deal_create(crm: &CrmClient, row: &OperationRow) -> LookupOutcome {
    match crm.find_deals_by_external_id(&row.operation_id).await {
        Ok(deals) => {
            let ours: Vec<&Value> = deals.iter().filter(|d| d.get("external_id").and_then(Value::as_str) == Some(row.operation_id.as_str())).collect();
            let ids: Vec<&str> = ours.iter().filter_map(|d| d.get("id").and_then(Value::as_str)).collect();
            let found = ids.iter().map(|id| Found::Succeeded { external_id: (*id).to_owned() }).collect();
            LookupOutcome { lookup: Lookup::Matches(found), evidence: json!({"via": "external_id_search", "found": ids}) }
        }
        Err(e) => failed("external_id_search", &e),
    }
}

/// A conditional update took effect iff the deal moved exactly one version past the
/// approved one and holds the approved values; still at the approved version, it did not.
async fn look_up_deal_update(crm: &CrmClient, row: &OperationRow) -> LookupOutcome {
    let (Some(deal_id), Some(expected)) = (row.target.as_deref(), row.payload.get("expected_version").and_then(Value::as_i64)) else {
        return LookupOutcome { lookup: Lookup::Ambiguous("unreadable_snapshot"), evidence: json!({"via": "deal"}) };
    };
    let deal = match crm.get_deal(deal_id).await {
        Ok(Some(deal)) => deal,
        Ok(None) => return LookupOutcome { lookup: Lookup::Ambiguous("deal_missing"), evidence: json!({"via": "deal", "deal_id": deal_id}) },
        Err(e) => return failed("deal", &e),
    };
    let version = deal.get("version").and_then(Value::as_i64);
    let applied = row.payload.get("patch").and_then(Value::as_object).is_some_and(|patch| patch.iter().all(|(k, v)| deal.get(k) == Some(v)));
    let evidence = json!({"via": "deal", "deal_id": deal_id, "version": version, "expected_version": expected});
    let lookup = match version {
        Some(v) if v == expected => Lookup::Matches(vec![]),
        Some(v) if v == expected + 1 && applied => Lookup::Matches(vec![Found::Succeeded { external_id: deal_id.to_owned() }]),
        _ => Lookup::Ambiguous("version_moved"),
    };
    LookupOutcome { lookup, evidence }
}

async fn look_up_payment(payments: &PaymentsClient, row: &OperationRow, external_id: Option<&str>, refund: bool) -> LookupOutcome {
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
