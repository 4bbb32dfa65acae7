//! What the console's pages show, built from the store's rows: each operation in words
//! (fleet-core's wording and amounts), its time left, its quorum progress when the view
//! carries one, and its history as lines a person reads.

use fleet_core::payee::{PayeeEvidence, UnknownPayee};
use fleet_core::wording::{describe, expiry_in_words, value_in_words};
use fleet_core::{canonical_json, ApprovalStatus, AttemptOutcome, Precondition, Role, Status};
use fleet_store::{AttemptRow, ConsoleOperation, EventRow, Principal};
use serde_json::Value;

/// The signed-in person, for the page header and every form's token.
pub struct Me {
    pub name: String,
    pub role: String,
    pub tenants: String,
    pub form_token: String,
}

impl Me {
    pub fn of(p: &Principal, form_token: String) -> Me {
        Me {
            name: p.name.clone(),
            role: p.role.as_str().to_owned(),
            tenants: p.tenants.join(", "),
            form_token,
        }
    }
}

/// One operation in a list or at the top of its page.
pub struct Card {
    pub id: String,
    pub tenant: String,
    pub headline: String,
    pub action: String,
    pub status: Status,
    pub approval_status: ApprovalStatus,
    pub pending: bool,
    /// "expires in 54 min" while the approval is pending.
    pub expiry: String,
    pub submitted_by: String,
    /// "1 of 2" when the view says how many approvals are needed.
    pub quorum: Option<String>,
    pub escalated: bool,
    /// Why it waits for an operator (unknown or escalated), or why it ended.
    pub why: Option<String>,
    pub created_at: String,
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

impl Card {
    pub fn of(op: &ConsoleOperation) -> Card {
        let r = &op.row;
        let pending = r.approval_status == ApprovalStatus::Pending
            && r.status == Status::NotStarted
            && op.expires_in_s > 0;
        let quorum = match (
            op.view.get("approvals_received").and_then(Value::as_i64),
            op.view.get("approvals_required").and_then(Value::as_i64),
        ) {
            (Some(got), Some(needed)) => Some(format!("{got} of {needed}")),
            _ => None,
        };
        let why = [
            r.status_reason.clone(),
            op.latest_reason.clone(),
            r.error_code.clone(),
        ]
        .into_iter()
        .flatten()
        .next();
        Card {
            id: r.operation_id.clone(),
            tenant: r.tenant_id.clone(),
            headline: describe(&r.action, r.target.as_deref(), &r.payload),
            action: r.action.clone(),
            status: r.status,
            approval_status: r.approval_status,
            pending,
            expiry: expiry_in_words(op.expires_in_s),
            submitted_by: text(&op.view, "submitted_by")
                .unwrap_or_else(|| "the intents queue".into()),
            quorum,
            escalated: r.escalated_at.is_some(),
            why,
            created_at: r.created_at.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        }
    }
}

/// Everything else the operation page shows about the snapshot and its decision.
pub struct Detail {
    pub provider: String,
    pub target: Option<String>,
    pub payload_hash: String,
    pub canonical_json: String,
    pub policy_version: String,
    pub data_version: String,
    pub rationale: Option<String>,
    pub supersedes: Option<String>,
    pub decided_by: Option<String>,
    pub decided_at: Option<String>,
    pub external_id: Option<String>,
    pub error_code: Option<String>,
    pub lookup_failures: i32,
    /// Who the effect goes to, for an action whose provider keeps a directory of payees.
    pub payee: Option<PayeeShown>,
}

/// The payee as the provider's directory described it at intake: what the approver sees
/// beside the id (never an account number: the masked form only).
pub struct PayeeShown {
    pub id: String,
    /// `None`: the directory could not confirm the payee.
    pub found: Option<PayeeFound>,
    /// Why it is unknown, in words.
    pub unknown_why: &'static str,
    pub looked_up_at: String,
    /// The provider refused the payment because the payee changed after the approval.
    pub changed: bool,
}

pub struct PayeeFound {
    pub name: String,
    pub country: String,
    pub account: String,
    pub verified: bool,
    pub version: i64,
}

impl PayeeShown {
    fn of(r: &fleet_store::OperationRow) -> Option<PayeeShown> {
        let evidence = PayeeEvidence::from_json(r.payee.as_ref()?)?;
        let (id, looked_up_at, unknown_why) = match &evidence {
            PayeeEvidence::Found {
                payee,
                looked_up_at,
            } => (payee.id.clone(), *looked_up_at, ""),
            PayeeEvidence::Unknown {
                id,
                reason,
                looked_up_at,
            } => (
                id.clone(),
                *looked_up_at,
                match reason {
                    UnknownPayee::NotFound => "the provider's directory has no such payee",
                    UnknownPayee::LookupFailed => "the provider's directory did not answer",
                },
            ),
        };
        Some(PayeeShown {
            id,
            found: evidence.found().map(|p| PayeeFound {
                name: p.name.clone(),
                country: p.country.clone(),
                account: p.account.masked.clone(),
                verified: p.verified,
                version: p.version,
            }),
            unknown_why,
            looked_up_at: format!("{} UTC", at(looked_up_at)),
            changed: r.status_reason.as_deref() == Some(Precondition::Payee.code()),
        })
    }
}

/// A time in the history tables (their headers say UTC).
fn at(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

impl Detail {
    pub fn of(op: &ConsoleOperation) -> Detail {
        let r = &op.row;
        Detail {
            provider: r.provider.as_str().to_owned(),
            target: r.target.clone(),
            payload_hash: r.payload_hash.clone(),
            canonical_json: canonical_json(&r.snapshot().to_json()),
            policy_version: r.policy_version.clone(),
            data_version: r.data_version.clone(),
            rationale: r.rationale.clone().filter(|s| !s.is_empty()),
            supersedes: r.supersedes.clone(),
            decided_by: r.decided_by.clone(),
            decided_at: r.decided_at.map(|t| format!("{} UTC", at(t))),
            external_id: r.external_id.clone(),
            error_code: r.error_code.clone(),
            lookup_failures: r.lookup_failures,
            payee: PayeeShown::of(r),
        }
    }
}

/// One patched member of a CRM deal: what it will become beside what it is now.
pub struct PatchLine {
    pub field: String,
    pub new_value: String,
    pub current: String,
}

/// A CRM update beside the deal as the CRM holds it now.
pub struct DealChange {
    pub deal_id: String,
    pub expected_version: i64,
    /// The deal's version now, when the CRM answered.
    pub current_version: Option<i64>,
    pub lines: Vec<PatchLine>,
    /// Said when the CRM could not be read.
    pub unavailable: Option<String>,
}

impl DealChange {
    /// `current` is the deal as the CRM returned it (`Ok(None)`: no such deal).
    pub fn of(op: &ConsoleOperation, current: Result<Option<Value>, String>) -> Option<DealChange> {
        let r = &op.row;
        if r.action != "crm.deal.update" {
            return None;
        }
        let patch = r.payload.get("patch")?.as_object()?;
        let (deal, unavailable) = match current {
            Ok(Some(deal)) => (Some(deal), None),
            Ok(None) => (None, Some("the CRM has no such deal".to_owned())),
            Err(e) => (None, Some(format!("the CRM could not be read ({e})"))),
        };
        let mut lines: Vec<PatchLine> = patch
            .iter()
            .map(|(k, v)| PatchLine {
                field: k.clone(),
                new_value: value_in_words(v),
                current: deal.as_ref().map_or_else(
                    || "?".to_owned(),
                    |d| {
                        d.get(k)
                            .map_or_else(|| "nothing".to_owned(), value_in_words)
                    },
                ),
            })
            .collect();
        lines.sort_by(|a, b| a.field.cmp(&b.field));
        Some(DealChange {
            deal_id: r.target.clone().unwrap_or_default(),
            expected_version: r
                .payload
                .get("expected_version")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            current_version: deal
                .as_ref()
                .and_then(|d| d.get("version"))
                .and_then(Value::as_i64),
            lines,
            unavailable,
        })
    }
}

/// One line of the history.
pub struct EventLine {
    pub at: String,
    pub kind: String,
    pub change: String,
    pub actor: String,
    pub reason: String,
    pub evidence: String,
}

impl EventLine {
    pub fn of(e: &EventRow) -> EventLine {
        let change = match (&e.from_status, &e.to_status) {
            (Some(f), Some(t)) if f != t => format!("{f} → {t}"),
            (_, Some(t)) => t.clone(),
            _ => String::new(),
        };
        EventLine {
            at: at(e.at),
            kind: e.kind.clone(),
            change,
            actor: e.actor.clone(),
            reason: e.reason.clone().unwrap_or_default(),
            evidence: e
                .evidence
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_default(),
        }
    }
}

/// One claim and what the provider answered.
pub struct AttemptLine {
    pub fence: i64,
    pub worker: String,
    pub started_at: String,
    pub finished_at: String,
    pub outcome: String,
    pub http_status: String,
    pub external_id: String,
    pub provider_request_id: String,
    pub answer: String,
}

impl AttemptLine {
    pub fn of(a: &AttemptRow) -> AttemptLine {
        let answer = match (&a.response, &a.detail) {
            (Some(r), Some(d)) => format!("{r} ({d})"),
            (Some(r), None) => r.to_string(),
            (None, Some(d)) => d.clone(),
            (None, None) => String::new(),
        };
        AttemptLine {
            fence: a.fence,
            worker: a.worker.clone(),
            started_at: at(a.started_at),
            finished_at: a.finished_at.map(at).unwrap_or_else(|| "—".into()),
            outcome: a
                .outcome
                .map_or("no answer recorded", AttemptOutcome::as_str)
                .to_owned(),
            http_status: a.http_status.map(|s| s.to_string()).unwrap_or_default(),
            external_id: a.external_id.clone().unwrap_or_default(),
            provider_request_id: a.provider_request_id.clone().unwrap_or_default(),
            answer,
        }
    }
}

/// What the signed-in person may do on this operation's page, and why not.
pub struct Allowed {
    pub approve: bool,
    /// Said instead of the approval forms while the approval is pending.
    pub approve_why_not: Option<String>,
    pub resolve: bool,
    pub dispute: bool,
}

impl Allowed {
    pub fn of(p: &Principal, card: &Card) -> Allowed {
        let approve_why_not = if !card.pending {
            None
        } else if p.role != Role::Approver {
            Some(format!(
                "Your role ({}) does not approve or reject.",
                p.role
            ))
        } else if card.submitted_by == p.name {
            Some("You submitted this operation: another person must approve it.".to_owned())
        } else {
            None
        };
        let operator = p.role == Role::Operator;
        let settleable = matches!(
            card.status,
            Status::Unknown | Status::Accepted | Status::Disputed
        ) || card.escalated;
        let final_for_workers = card.status.is_final();
        Allowed {
            approve: card.pending && approve_why_not.is_none(),
            approve_why_not,
            resolve: operator && settleable,
            dispute: operator && !final_for_workers,
        }
    }
}
