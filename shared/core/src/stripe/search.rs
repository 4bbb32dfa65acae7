//! Stripe's Search API for the objects it covers (PaymentIntents among them), as the
//! payments provider spoken as Stripe uses it to find an object the fleet made when the
//! answer to its create was lost (`PAYMENTS_STRIPE_SEARCH=on`, the default): the query
//! that names the operation, and what a search's answer holds. Pure rules, no HTTP.
//!
//! Stripe's search is eventually consistent: an object may be missing from its results
//! for a while after it was created (under a minute in normal operation, Stripe says).
//! An empty search therefore proves nothing by itself; reconcile judges it as every
//! absence is judged, only once `PAYMENTS_MAX_REQUEST_S` plus `PAYMENTS_SEARCH_LAG_MS`
//! have passed since the latest attempt began (`fleet_core::reconcile::absence_provable`).
//!
//! Stripe's reference: <https://docs.stripe.com/search>,
//! <https://docs.stripe.com/search#search-query-language>.

use serde_json::Value;

use super::OPERATION_METADATA;

/// The query that finds the objects carrying `key` in `metadata[fleet_operation]`:
/// `metadata['fleet_operation']:'KEY'`, an exact match. A quote or a backslash in the key
/// is escaped as the query language asks (an operation's key has neither).
pub fn operation_query(key: &str) -> String {
    let mut quoted = String::with_capacity(key.len());
    for c in key.chars() {
        if matches!(c, '\'' | '\\') {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    format!("metadata['{OPERATION_METADATA}']:'{quoted}'")
}

/// One page of a search's answer: its objects, and the `page` token of the next page
/// when `has_more` says there is one. `None` for anything that is not a search result.
pub fn search_page(body: &mut Value) -> Option<(Vec<Value>, Option<String>)> {
    if body.get("object").and_then(Value::as_str) != Some("search_result") {
        return None;
    }
    let next = if body.get("has_more").and_then(Value::as_bool) == Some(true) {
        Some(body.get("next_page")?.as_str()?.to_owned())
    } else {
        None
    };
    match body.get_mut("data").map(Value::take) {
        Some(Value::Array(objects)) => Some((objects, next)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_query_names_the_operation_exactly() {
        assert_eq!(
            operation_query("op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8"),
            "metadata['fleet_operation']:'op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8'"
        );
        assert_eq!(
            operation_query("a'b\\c"),
            "metadata['fleet_operation']:'a\\'b\\\\c'"
        );
    }

    #[test]
    fn a_search_result_reads_as_a_page() {
        let mut last = json!({"object": "search_result", "data": [{"id": "pi_1"}],
                              "has_more": false, "next_page": null});
        assert_eq!(
            search_page(&mut last),
            Some((vec![json!({"id": "pi_1"})], None))
        );
        let mut more = json!({"object": "search_result", "data": [], "has_more": true,
                              "next_page": "page_2"});
        assert_eq!(
            search_page(&mut more),
            Some((vec![], Some("page_2".into())))
        );
        // More, but no token to ask for it: not a page the search could go on from.
        let mut broken = json!({"object": "search_result", "data": [], "has_more": true});
        assert_eq!(search_page(&mut broken), None);
        let mut list = json!({"object": "list", "data": []});
        assert_eq!(search_page(&mut list), None);
    }
}
