//! The CRM's deals: the object, the validation of create and patch bodies, and the store.
//!
//! A deal created asynchronously (`202 queued`) is stored at once with a `visible_at` in
//! the future and exists — for reads, patches and the effect counters alike — only once
//! the simulator's clock has reached it. Materialising lazily like this keeps the
//! simulator deterministic: no background task, and `POST /_sim/clock/advance` makes a
//! queued deal appear as surely as waiting does.

use std::collections::HashMap;

use chrono::{DateTime, TimeDelta, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::api_error::ApiError;
use crate::config::SimConfig;
use crate::fields::Fields;

const CREATE_FIELDS: &[&str] = &[
    "external_id",
    "name",
    "amount_minor",
    "currency",
    "stage",
    "owner_id",
];

/// What a patch may change: everything but the external id (and the CRM's own fields).
const PATCH_FIELDS: &[&str] = &["name", "amount_minor", "currency", "stage", "owner_id"];

/// How the CRM behaves, from `SimConfig`.
#[derive(Clone, Copy, Debug)]
pub struct CrmSettings {
    /// How long a created deal stays invisible to `GET /v1/deals?external_id=`.
    pub search_lag: TimeDelta,
    /// Whether every `POST /v1/deals` answers `202 queued` and creates the deal later.
    pub async_create: bool,
    /// How much later a queued deal appears, unless a `queued` fault says otherwise.
    pub async_delay: TimeDelta,
}

impl CrmSettings {
    pub fn from_config(config: &SimConfig) -> anyhow::Result<Self> {
        Ok(Self {
            search_lag: millis(config.crm_search_lag_ms, "crm_search_lag_ms")?,
            async_create: config.crm_async_create,
            async_delay: millis(config.crm_async_delay_ms, "crm_async_delay_ms")?,
        })
    }
}

fn millis(ms: u64, name: &str) -> anyhow::Result<TimeDelta> {
    TimeDelta::try_milliseconds(i64::try_from(ms)?)
        .ok_or_else(|| anyhow::anyhow!("{name} is out of range"))
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Deal {
    pub id: String,
    pub version: u64,
    pub external_id: String,
    pub name: String,
    pub amount_minor: i64,
    pub currency: String,
    pub stage: String,
    pub owner_id: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    // When the deal starts to exist; equal to `created_at` (a queued deal is created
    // when it materialises).
    #[serde(skip)]
    visible_at: DateTime<Utc>,
}

/// A validated `POST /v1/deals` body.
#[derive(Clone, Debug)]
pub struct NewDeal {
    external_id: String,
    name: String,
    amount_minor: i64,
    currency: String,
    stage: String,
    owner_id: String,
}

impl NewDeal {
    pub fn validate(body: &Value) -> Result<Self, ApiError> {
        let fields = Fields::of(body, CREATE_FIELDS)?;
        Ok(Self {
            external_id: fields.text("external_id")?,
            name: fields.text("name")?,
            amount_minor: fields.amount("amount_minor")?,
            currency: fields.currency("currency")?,
            stage: fields.text("stage")?,
            owner_id: fields.text("owner_id")?,
        })
    }

    /// The deal as it will exist from `created_at` on, at version 1.
    pub fn into_deal(self, created_at: DateTime<Utc>) -> Deal {
        Deal {
            id: format!("deal_{}", ulid::Ulid::new()),
            version: 1,
            external_id: self.external_id,
            name: self.name,
            amount_minor: self.amount_minor,
            currency: self.currency,
            stage: self.stage,
            owner_id: self.owner_id,
            created_at,
            updated_at: created_at,
            visible_at: created_at,
        }
    }
}

/// A validated `PATCH /v1/deals/{id}` body: the members present, each checked like the
/// same member of a create.
#[derive(Clone, Debug, Default)]
pub struct DealPatch {
    name: Option<String>,
    amount_minor: Option<i64>,
    currency: Option<String>,
    stage: Option<String>,
    owner_id: Option<String>,
}

impl DealPatch {
    pub fn validate(body: &Value) -> Result<Self, ApiError> {
        let fields = Fields::of(body, PATCH_FIELDS)?;
        let present = |name: &'static str| -> Result<bool, ApiError> {
            match body.get(name) {
                None => Ok(false),
                // A patch cannot clear a field: every field of a deal is required.
                Some(Value::Null) => Err(ApiError::invalid("parameter_invalid", name)),
                Some(_) => Ok(true),
            }
        };
        let mut patch = Self::default();
        if present("name")? {
            patch.name = Some(fields.text("name")?);
        }
        if present("amount_minor")? {
            patch.amount_minor = Some(fields.amount("amount_minor")?);
        }
        if present("currency")? {
            patch.currency = Some(fields.currency("currency")?);
        }
        if present("stage")? {
            patch.stage = Some(fields.text("stage")?);
        }
        if present("owner_id")? {
            patch.owner_id = Some(fields.text("owner_id")?);
        }
        Ok(patch)
    }

    /// Applies the patch as a new version of the deal.
    fn apply(self, deal: &mut Deal, now: DateTime<Utc>) {
        if let Some(name) = self.name {
            deal.name = name;
        }
        if let Some(amount_minor) = self.amount_minor {
            deal.amount_minor = amount_minor;
        }
        if let Some(currency) = self.currency {
            deal.currency = currency;
        }
        if let Some(stage) = self.stage {
            deal.stage = stage;
        }
        if let Some(owner_id) = self.owner_id {
            deal.owner_id = owner_id;
        }
        deal.version += 1;
        deal.updated_at = now;
    }
}

/// The version a conditional update expects (`If-Match`), if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precondition {
    /// No `If-Match`, or `If-Match: *`: applied unconditionally.
    None,
    Version(u64),
}

/// Why a patch was not applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchRefused {
    NotFound,
    VersionConflict { current_version: u64 },
}

/// Every deal ever created (or queued), in order of creation request.
#[derive(Debug)]
pub struct DealStore {
    settings: CrmSettings,
    deals: Vec<Deal>,
    by_id: HashMap<String, usize>,
    by_external_id: HashMap<String, Vec<usize>>,
}

impl DealStore {
    pub fn new(settings: CrmSettings) -> Self {
        Self {
            settings,
            deals: Vec::new(),
            by_id: HashMap::new(),
            by_external_id: HashMap::new(),
        }
    }

    pub fn settings(&self) -> CrmSettings {
        self.settings
    }

    /// Forgets every deal, keeping the settings.
    pub fn forget_all(&mut self) {
        *self = Self::new(self.settings);
    }

    /// Stores a deal that exists from now on.
    pub fn create(&mut self, new: NewDeal, now: DateTime<Utc>) -> Deal {
        let deal = new.into_deal(now);
        self.insert(deal.clone());
        deal
    }

    /// Stores a deal that will exist from `visible_at` on (asynchronous create).
    pub fn enqueue(&mut self, new: NewDeal, visible_at: DateTime<Utc>) {
        self.insert(new.into_deal(visible_at));
    }

    fn insert(&mut self, deal: Deal) {
        let index = self.deals.len();
        self.by_id.insert(deal.id.clone(), index);
        self.by_external_id
            .entry(deal.external_id.clone())
            .or_default()
            .push(index);
        self.deals.push(deal);
    }

    /// The deal with this id if it exists at `now`.
    pub fn get(&self, id: &str, now: DateTime<Utc>) -> Option<&Deal> {
        self.by_id
            .get(id)
            .map(|&index| &self.deals[index])
            .filter(|deal| deal.visible_at <= now)
    }

    /// Every deal with this external id that existed at `at`, in creation order.
    pub fn with_external_id<'a>(
        &'a self,
        external_id: &str,
        at: DateTime<Utc>,
    ) -> impl Iterator<Item = &'a Deal> + 'a {
        let indexes = self
            .by_external_id
            .get(external_id)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        indexes
            .iter()
            .map(|&index| &self.deals[index])
            .filter(move |deal| deal.visible_at <= at)
    }

    /// The deals a search at `now` finds: those older than the search lag.
    pub fn search<'a>(
        &'a self,
        external_id: &str,
        now: DateTime<Utc>,
    ) -> impl Iterator<Item = &'a Deal> + 'a {
        self.with_external_id(external_id, now - self.settings.search_lag)
    }

    pub fn count_with_external_id(&self, external_id: &str, now: DateTime<Utc>) -> usize {
        self.with_external_id(external_id, now).count()
    }

    /// How many deals exist at `now` (queued ones not yet materialised are not counted).
    pub fn count(&self, now: DateTime<Utc>) -> usize {
        self.deals
            .iter()
            .filter(|deal| deal.visible_at <= now)
            .count()
    }

    /// Applies `patch` to the deal `id` if it exists and `precondition` holds.
    pub fn patch(
        &mut self,
        id: &str,
        precondition: Precondition,
        patch: DealPatch,
        now: DateTime<Utc>,
    ) -> Result<Deal, PatchRefused> {
        let deal = self
            .by_id
            .get(id)
            .map(|&index| &mut self.deals[index])
            .filter(|deal| deal.visible_at <= now)
            .ok_or(PatchRefused::NotFound)?;
        if let Precondition::Version(expected) = precondition {
            if expected != deal.version {
                return Err(PatchRefused::VersionConflict {
                    current_version: deal.version,
                });
            }
        }
        patch.apply(deal, now);
        Ok(deal.clone())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn settings(search_lag_ms: i64) -> CrmSettings {
        CrmSettings {
            search_lag: TimeDelta::milliseconds(search_lag_ms),
            async_create: false,
            async_delay: TimeDelta::milliseconds(500),
        }
    }

    fn new_deal(external_id: &str) -> NewDeal {
        NewDeal::validate(&json!({"external_id": external_id, "name": "Acme renewal",
            "amount_minor": 500_000, "currency": "KZT", "stage": "proposal",
            "owner_id": "usr_1"}))
        .unwrap()
    }

    #[test]
    fn external_ids_are_not_unique() {
        let mut store = DealStore::new(settings(0));
        let now = Utc::now();
        let first = store.create(new_deal("op_a"), now);
        let second = store.create(new_deal("op_a"), now);
        assert_ne!(first.id, second.id);
        assert_eq!(store.count_with_external_id("op_a", now), 2);
        assert_eq!(store.search("op_a", now).count(), 2);
        assert_eq!(store.count(now), 2);
    }

    #[test]
    fn a_queued_deal_exists_only_from_its_visible_at() {
        let mut store = DealStore::new(settings(0));
        let now = Utc::now();
        let later = now + TimeDelta::seconds(1);
        store.enqueue(new_deal("op_q"), later);
        assert_eq!(store.count(now), 0);
        assert_eq!(store.search("op_q", now).count(), 0);
        let deal = store.search("op_q", later).next().unwrap().clone();
        assert!(store.get(&deal.id, now).is_none());
        assert_eq!(store.get(&deal.id, later), Some(&deal));
        assert_eq!(deal.created_at, later);
        assert_eq!(store.count(later), 1);
        assert_eq!(
            store.patch(&deal.id, Precondition::None, DealPatch::default(), now),
            Err(PatchRefused::NotFound)
        );
    }

    #[test]
    fn search_lags_but_get_does_not() {
        let mut store = DealStore::new(settings(1_000));
        let now = Utc::now();
        let deal = store.create(new_deal("op_l"), now);
        assert_eq!(store.search("op_l", now).count(), 0);
        assert!(store.get(&deal.id, now).is_some());
        assert_eq!(
            store
                .search("op_l", now + TimeDelta::milliseconds(1_000))
                .count(),
            1
        );
    }

    #[test]
    fn patches_check_the_version_and_bump_it() {
        let mut store = DealStore::new(settings(0));
        let now = Utc::now();
        let deal = store.create(new_deal("op_p"), now);
        let patch = DealPatch::validate(&json!({"stage": "won", "amount_minor": 7})).unwrap();
        let patched = store
            .patch(&deal.id, Precondition::Version(1), patch.clone(), now)
            .unwrap();
        assert_eq!(
            (
                patched.version,
                patched.stage.as_str(),
                patched.amount_minor
            ),
            (2, "won", 7)
        );
        assert_eq!(
            store.patch(&deal.id, Precondition::Version(1), patch.clone(), now),
            Err(PatchRefused::VersionConflict { current_version: 2 })
        );
        assert_eq!(
            store
                .patch(&deal.id, Precondition::None, patch, now)
                .unwrap()
                .version,
            3
        );
    }

    #[test]
    fn bodies_are_validated_like_the_payments_api() {
        let code = |result: Result<(), ApiError>| result.unwrap_err().code;
        let mut body = json!({"external_id": "op_v", "name": "n", "amount_minor": 1,
            "currency": "KZT", "stage": "s", "owner_id": "o", "extra": 1});
        assert_eq!(
            code(NewDeal::validate(&body).map(|_| ())),
            "parameter_unknown"
        );
        body.as_object_mut().unwrap().remove("extra");
        body["amount_minor"] = json!(1.5);
        assert_eq!(
            code(NewDeal::validate(&body).map(|_| ())),
            "parameter_invalid_integer"
        );
        assert_eq!(
            code(DealPatch::validate(&json!({"external_id": "op_x"})).map(|_| ())),
            "parameter_unknown"
        );
        assert_eq!(
            code(DealPatch::validate(&json!({"version": 3})).map(|_| ())),
            "parameter_unknown"
        );
        assert_eq!(
            code(DealPatch::validate(&json!({"stage": null})).map(|_| ())),
            "parameter_invalid"
        );
        assert_eq!(
            code(DealPatch::validate(&json!({"currency": "usd"})).map(|_| ())),
            "invalid_currency"
        );
        assert_eq!(
            code(DealPatch::validate(&json!([])).map(|_| ())),
            "invalid_json"
        );
    }
}
