//! The console's pages (GET only: reading never changes anything).

use std::sync::Arc;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use fleet_core::authz::Denial;
use fleet_core::objects::ObjectRef;
use fleet_core::step_up::StepUp;
use fleet_core::{Action, Status};
use fleet_store::{ConsoleOperation, OperationSearch};
use serde::Deserialize;

use super::done::{confirmation, Recorded};
use super::handler::html;
use super::original_charge::OriginalCharge;
use super::passkeys::Signing;
use super::present::{
    foreign_object_note, step_up_of, Allowed, ApprovalLine, AttemptLine, Card, DealChange, Detail,
    EventLine, Me,
};
use super::session::Signed;
use super::setup::Console;
use crate::decisions::{locate, Addressed, DecisionError};
use crate::error::ApiError;
use crate::state::AppState;

/// Rows on one list page.
const PAGE_ROWS: i64 = 100;

#[derive(Template)]
#[template(path = "console/inbox.html")]
struct InboxPage {
    me: Me,
    items: Vec<Card>,
}

#[derive(Template)]
#[template(path = "console/queue.html")]
struct QueuePage {
    me: Me,
    items: Vec<Card>,
}

#[derive(Template)]
#[template(path = "console/operations.html")]
struct OperationsPage {
    me: Me,
    items: Vec<Card>,
    q_id: String,
    q_status: String,
    q_tenant: String,
    statuses: Vec<&'static str>,
    tenants: Vec<String>,
}

/// A message at the top of the operation page.
pub struct Banner {
    /// `ok` or `refused`.
    pub kind: &'static str,
    pub text: String,
}

#[derive(Template)]
#[template(path = "console/operation.html")]
pub struct OperationPage {
    me: Me,
    card: Card,
    detail: Detail,
    deal: Option<DealChange>,
    /// A refund's original charge, as Stripe described it at intake.
    original_charge: Option<OriginalCharge>,
    /// Said when the operation names an object the fleet has no record of.
    foreign_object: Option<String>,
    allowed: Allowed,
    /// Whether and how the approval is signed, for a person who may approve.
    signing: Option<Signing>,
    /// The amount to re-type before approving, above the policy's threshold.
    retype: Option<String>,
    /// Who approved the stored snapshot already.
    approvals: Vec<ApprovalLine>,
    banner: Option<Banner>,
    /// What the signed-in person has decided on this operation, by the records.
    recorded: Recorded,
    attempts: Vec<AttemptLine>,
    lookups: Vec<EventLine>,
    timeline: Vec<EventLine>,
}

#[derive(Template)]
#[template(path = "console/error.html")]
struct ErrorPage {
    title: String,
    message: String,
}

pub fn error_page(status: StatusCode, title: &str, message: &str) -> Response {
    let mut r = html(
        ErrorPage {
            title: title.into(),
            // A refusal may quote what was sent: shown with its hidden characters revealed.
            message: fleet_core::visible::reveal(message),
        }
        .render(),
    );
    *r.status_mut() = status;
    r
}

fn cards(ops: &[ConsoleOperation]) -> Vec<Card> {
    ops.iter().map(Card::of).collect()
}

pub async fn inbox(State(state): State<AppState>, signed: Signed) -> Result<Response, ApiError> {
    let ops = state
        .store
        .approval_inbox(&signed.principal.tenants, PAGE_ROWS)
        .await?;
    Ok(html(
        InboxPage {
            me: signed.me(),
            items: cards(&ops),
        }
        .render(),
    ))
}

pub async fn queue(State(state): State<AppState>, signed: Signed) -> Result<Response, ApiError> {
    let ops = state
        .store
        .operator_queue(&signed.principal.tenants, PAGE_ROWS)
        .await?;
    Ok(html(
        QueuePage {
            me: signed.me(),
            items: cards(&ops),
        }
        .render(),
    ))
}

#[derive(Debug, Default, Deserialize)]
pub struct SearchQuery {
    id: Option<String>,
    status: Option<String>,
    tenant: Option<String>,
}

pub async fn operations(
    State(state): State<AppState>,
    signed: Signed,
    Query(q): Query<SearchQuery>,
) -> Result<Response, ApiError> {
    let nonempty = |s: &Option<String>| {
        s.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let (id, status, tenant) = (nonempty(&q.id), nonempty(&q.status), nonempty(&q.tenant));
    let search = OperationSearch {
        id_prefix: id.as_deref(),
        // An unknown status or someone else's tenant matches nothing rather than erroring.
        status: status.as_deref().and_then(Status::parse),
        tenant: tenant.as_deref(),
    };
    let ops = if status.is_some() && search.status.is_none() {
        Vec::new()
    } else {
        state
            .store
            .search_operations(&signed.principal.tenants, search, PAGE_ROWS)
            .await?
    };
    Ok(html(
        OperationsPage {
            me: signed.me(),
            items: cards(&ops),
            q_id: id.unwrap_or_default(),
            q_status: status.unwrap_or_default(),
            q_tenant: tenant.unwrap_or_default(),
            statuses: Status::ALL.iter().map(|s| s.as_str()).collect(),
            tenants: signed.principal.tenants.clone(),
        }
        .render(),
    ))
}

#[derive(Debug, Default, Deserialize)]
pub struct DoneQuery {
    done: Option<String>,
    /// The operation's tenant, needed when two of the person's tenants hold the id.
    tenant: Option<String>,
}

/// The page of one operation; after a decision (`?done=`), with its confirmation when
/// the person's decision is on record (`super::done`), and without one otherwise.
pub async fn operation(
    State(state): State<AppState>,
    State(console): State<Arc<Console>>,
    signed: Signed,
    Path(id): Path<String>,
    Query(q): Query<DoneQuery>,
) -> Result<Response, ApiError> {
    let at = Addressed::new(&id, q.tenant.as_deref());
    Ok(
        match operation_page(&state, &console, &signed, at, None).await? {
            Ok(mut page) => {
                page.banner = confirmation(q.done.as_deref(), page.recorded).map(|text| Banner {
                    kind: "ok",
                    text: text.to_owned(),
                });
                html(page.render())
            }
            Err(answer) => answer,
        },
    )
}

pub fn not_found() -> Response {
    error_page(
        StatusCode::NOT_FOUND,
        "Not found",
        "No such operation among your tenants.",
    )
}

/// An id two of the person's tenants hold, named without its tenant.
pub fn ambiguous() -> Response {
    error_page(
        StatusCode::CONFLICT,
        "Which tenant?",
        "This id names an operation in more than one of your tenants. Open it from a list, or add ?tenant= with its tenant to the address.",
    )
}

/// The operation page as `signed` may see it; otherwise the page to answer instead (not
/// found when it is not theirs to see, exactly as a free id; which tenant, when two of
/// theirs hold the id).
pub async fn operation_page(
    state: &AppState,
    console: &Console,
    signed: &Signed,
    at: Addressed<'_>,
    banner: Option<Banner>,
) -> Result<Result<OperationPage, Response>, ApiError> {
    let key = match locate(&state.store, &signed.principal.actor(), at).await {
        Ok((key, _)) => key,
        Err(DecisionError::Denied(Denial::Ambiguous)) => return Ok(Err(ambiguous())),
        Err(DecisionError::Store(e)) => return Err(e.into()),
        Err(_) => return Ok(Err(not_found())),
    };
    let Some(op) = state.store.console_operation(key.op()).await? else {
        return Ok(Err(not_found()));
    };
    let attempts = state.store.attempts(key.op()).await?;
    let events = state.store.events(key.op()).await?;
    let deal = match (&op.row.target, op.row.action, &console.crm) {
        (Some(deal_id), Action::CrmDealUpdate, Some(crm)) => {
            DealChange::of(&op, crm.get_deal(deal_id).await.map_err(|e| e.to_string()))
        }
        (_, Action::CrmDealUpdate, None) => DealChange::of(&op, Err("no CRM is configured".into())),
        _ => None,
    };
    let foreign_object = foreign_object_note(&op, &unrecorded_objects(state, &op).await?);
    let card = Card::of(&op);
    let allowed = Allowed::of(&signed.principal, &card);
    let retype = match step_up_of(&op) {
        (StepUp::RetypeAmount, Some((_, _, shown))) if allowed.approve => Some(shown),
        _ => None,
    };
    let given = state.store.approvals_given(key.op()).await?;
    let approvals = given.iter().map(ApprovalLine::of).collect();
    let signing = if allowed.approve {
        Some(
            Signing::of(
                state,
                console,
                &signed.principal.name,
                &op.row,
                chrono::Utc::now(),
            )
            .await?,
        )
    } else {
        None
    };
    let recorded = Recorded::of(&signed.principal.name, &op.row, &given, &events);
    let timeline: Vec<EventLine> = events.iter().map(EventLine::of).collect();
    let lookups = events
        .iter()
        .filter(|e| e.kind == fleet_core::history::HistoryKind::Lookup)
        .map(EventLine::of)
        .collect();
    Ok(Ok(OperationPage {
        me: signed.me(),
        detail: Detail::of(&op),
        card,
        deal,
        original_charge: OriginalCharge::of(&events),
        foreign_object,
        allowed,
        signing,
        retype,
        approvals,
        banner,
        recorded,
        attempts: attempts.iter().map(AttemptLine::of).collect(),
        lookups,
        timeline,
    }))
}

/// The provider objects `op` names that the fleet has no record of (made outside it), with
/// their ids, by the fleet's records now.
async fn unrecorded_objects(
    state: &AppState,
    op: &ConsoleOperation,
) -> Result<Vec<(ObjectRef, String)>, ApiError> {
    let r = &op.row;
    let action = r.action;
    let mut unrecorded = Vec::new();
    for object in action.spec().objects {
        let Some(id) = object.id(r.target.as_deref(), &r.payload) else {
            continue;
        };
        let recorded = state
            .store
            .object_tenants(r.provider.as_str(), id, &object.recorded_by_names())
            .await?;
        if recorded.is_empty() {
            unrecorded.push((*object, id.to_owned()));
        }
    }
    Ok(unrecorded)
}

impl OperationPage {
    /// The page with a refusal at its top, answered with `status`.
    pub fn refused(mut self, status: StatusCode, text: String) -> Response {
        self.banner = Some(Banner {
            kind: "refused",
            text: fleet_core::visible::reveal(&text),
        });
        let mut r = html(self.render());
        *r.status_mut() = status;
        r.into_response()
    }
}
