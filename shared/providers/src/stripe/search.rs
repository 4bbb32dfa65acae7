//! Finding objects again at Stripe: paging a list to its end, and Stripe's Search API for
//! the objects it covers. `PAYMENTS_STRIPE_SEARCH=on` (the default) finds PaymentIntents
//! with `GET /v1/payment_intents/search?query=metadata['fleet_operation']:'KEY'`; `off`
//! pages `GET /v1/payment_intents` and keeps those whose metadata names the operation.
//! Either way only the objects are returned: which of them are the operation's, and what
//! an empty answer proves (nothing, until the search lag has passed since the attempt),
//! is read by `fleet_core`.
//!
//! Stripe's reference: <https://docs.stripe.com/search>,
//! <https://docs.stripe.com/api/payment_intents/search>,
//! <https://docs.stripe.com/api/pagination>.

use fleet_core::stripe::search::{operation_query, search_page};
use fleet_core::stripe::OPERATION_METADATA;
use serde_json::Value;

use super::StripeClient;
use crate::lookup::LookupError;

/// The most pages a lookup reads (of a list, or of a search): a longer answer is left
/// to a person rather than half-read.
pub const MAX_PAGES: usize = 50;

/// Stripe's largest page.
const PAGE_SIZE: &str = "100";

/// How a lookup of PaymentIntents asked: the evidence's `via`.
pub const VIA_SEARCH: &str = "search";
pub const VIA_LIST: &str = "list";

impl StripeClient {
    /// Every object of the list at `path` filtered by `filter`, newest first, paging with
    /// `starting_after` while `has_more`; an error when it has more than [`MAX_PAGES`].
    pub async fn list_all(
        &self,
        path: &[&str],
        filter: &[(&str, &str)],
    ) -> Result<Vec<Value>, LookupError> {
        let mut all = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut query = vec![("limit", PAGE_SIZE)];
            query.extend_from_slice(filter);
            if let Some(after) = &after {
                query.push(("starting_after", after));
            }
            let page = self.api().page(path, &query).await?;
            let last = page
                .objects
                .last()
                .and_then(|o| o.get("id"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            all.extend(page.objects);
            match last {
                Some(last) if page.has_more => after = Some(last),
                _ => return Ok(all),
            }
        }
        Err(LookupError::Unfinished(MAX_PAGES))
    }

    /// Every object Stripe's Search API finds at `path` (`…/search`) for `query`, paging
    /// with `page` while `has_more`. Eventually consistent: an object made a moment ago
    /// may be missing.
    pub async fn search_all(&self, path: &[&str], query: &str) -> Result<Vec<Value>, LookupError> {
        let mut all = Vec::new();
        let mut page: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut asked = vec![("query", query), ("limit", PAGE_SIZE)];
            if let Some(page) = &page {
                asked.push(("page", page));
            }
            let mut body = self.api().get_json(path, &asked).await?;
            let (objects, next) = search_page(&mut body)
                .ok_or_else(|| LookupError::Body("not a search result".into()))?;
            all.extend(objects);
            match next {
                Some(next) => page = Some(next),
                None => return Ok(all),
            }
        }
        Err(LookupError::Unfinished(MAX_PAGES))
    }

    /// The PaymentIntents that may be the operation `key`'s, and how they were asked for:
    /// with Stripe's Search API when this client searches (`PAYMENTS_STRIPE_SEARCH=on`),
    /// else the list `GET /v1/payment_intents` narrowed by `list_filter` (the customer,
    /// say), paged, those carrying the key kept. The caller reads them
    /// (`metadata[fleet_operation]` again: a search's match is not trusted alone).
    pub async fn payment_intents_carrying(
        &self,
        key: &str,
        list_filter: &[(&str, &str)],
    ) -> (&'static str, Result<Vec<Value>, LookupError>) {
        if self.searches() {
            let found = self
                .search_all(&["v1", "payment_intents", "search"], &operation_query(key))
                .await;
            return (VIA_SEARCH, found);
        }
        let all = self.list_all(&["v1", "payment_intents"], list_filter).await;
        let carrying = all.map(|all| {
            all.into_iter()
                .filter(|o| {
                    o.get("metadata")
                        .and_then(|m| m.get(OPERATION_METADATA))
                        .and_then(Value::as_str)
                        == Some(key)
                })
                .collect()
        });
        (VIA_LIST, carrying)
    }
}
