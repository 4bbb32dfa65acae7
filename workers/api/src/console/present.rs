//! What the console's pages show, built from the store's rows: each operation in words
//! (fleet-core's wording and amounts), its time left, its quorum progress when the view
//! carries one, and its history as lines a person reads.
//!
//! Every text that came from an agent, a provider or a person is passed through
//! `fleet_core::visible::reveal` here, once: an invisible or directional character
//! (U+202E, U+200B …) is shown as its code point, never interpreted, so the page cannot
//! show one id while the operation carries another. The templates escape HTML; this is
//! about the characters HTML escaping leaves alone.

use fleet_core::authz::{self, Actor, Denial, OperationAction, OperationFacts};
use fleet_core::money::format_amount;
use fleet_core::objects::ObjectRef;
use fleet_core::payee::{NameCheck, PayeeEvidence, UnknownPayee};
use fleet_core::step_up::StepUp;
use fleet_core::visible::reveal;
use fleet_core::wording::{
    approval_in_words, expiry_in_words, headline_naming_payee, instant_in_words,
    patch_field_in_words, patch_value_in_words, quote, reason_in_words, status_in_words, Headline,
};
use fleet_core::{canonical_json, Action, ApprovalStatus, AttemptOutcome, Precondition, Status};
use fleet_store::{ApprovalGiven, AttemptRow, ConsoleOperation, EventRow, Principal};
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
            name: reveal(&p.name),
            role: p.role.as_str().to_owned(),
            tenants: reveal(&p.tenants.join(", ")),
            form_token,
        }
    }
}

/// One operation in a list or at the top of its page.
pub struct Card {
    pub id: String,
    pub tenant: String,
    /// `tenant=<the tenant, percent-encoded>`: every link and form of the operation names
    /// its tenant, since ids are unique per tenant only (docs/design.md#tenant-boundaries).
    pub tenant_query: String,
    /// The headline's sentence, typed values only ("Create a deal worth 50,000,000.00
    /// KZT, owned by u_7"), and for a payment that names its payee the name after it,
    /// quoted (`Pay 1,250.00 EUR to "Acme Supplies Ltd"`): the headline as one string,
    /// for lists that show it so.
    pub headline: String,
    /// The sentence alone ("Pay 1,250.00 EUR to"), for a page that shows the payee's name
    /// in an element of its own after it.
    pub said: String,
    /// Who is paid, by the name the provider's directory holds (revealed; the template
    /// quotes it), when the headline names them.
    pub payee_name: Option<String>,
    /// Below the headline that names the payee: its id, masked account and invoice.
    pub payee_under: Option<String>,
    /// The free text the operation carries, each piece shown in an element of its own
    /// after the sentence, never inside it.
    pub quoted: Vec<QuotedShown>,
    pub action: String,
    pub status: Status,
    pub approval_status: ApprovalStatus,
    /// "Waiting for approval", "Outcome unknown: being reconciled", …
    pub status_words: &'static str,
    /// "approval pending", "approved", …
    pub approval_words: &'static str,
    pub pending: bool,
    /// "expires in 54 min" while the approval is pending.
    pub expiry: String,
    /// When the approval window closes: "19:54 UTC on 1 Dec 2026".
    pub deadline: String,
    /// The risk cues found at intake, in words ("first payment to this payee").
    pub risks: Vec<String>,
    pub submitted_by: String,
    /// The submitting principal's name as stored (not as shown), for the authorization
    /// rules; none when the intent came through the queue.
    pub submitter: Option<String>,
    /// "1 of 2" when the view says how many approvals are needed.
    pub quorum: Option<String>,
    pub escalated: bool,
    /// Why it waits for an operator (unknown or escalated), or why it ended.
    pub why: Option<String>,
    pub created_at: String,
}

/// One piece of free text of the headline, as the page shows it.
pub struct QuotedShown {
    /// The payload member it came from ("name", "reason").
    pub member: &'static str,
    /// The text with its hidden characters revealed; the template quotes it.
    pub text: String,
}

/// The headline as the page shows it: its sentence, the payee it names, its free text,
/// each revealed.
struct HeadlineShown {
    /// The sentence, then the payee's name quoted when it names one.
    one_line: String,
    said: String,
    payee_name: Option<String>,
    payee_under: Option<String>,
    quoted: Vec<QuotedShown>,
}

fn headline_shown(h: Headline) -> HeadlineShown {
    let quoted = h
        .quoted
        .into_iter()
        .map(|q| QuotedShown {
            member: q.member,
            text: reveal(&q.text),
        })
        .collect();
    let said = reveal(&h.said);
    let one_line = match &h.payee {
        Some(p) => format!("{said} {}", quote(&p.name)),
        None => said.clone(),
    };
    HeadlineShown {
        one_line,
        said,
        payee_name: h.payee.as_ref().map(|p| reveal(&p.name)),
        payee_under: h.payee.as_ref().map(|p| reveal(&p.under)),
        quoted,
    }
}

fn shown(s: &Option<String>) -> Option<String> {
    s.as_deref().map(reveal)
}

impl Card {
    pub fn of(op: &ConsoleOperation) -> Card {
        let r = &op.row;
        let pending = r.approval_status == ApprovalStatus::Pending
            && r.status == Status::NotStarted
            && op.expires_in_s > 0;
        let quorum = Some(format!(
            "{} of {}",
            op.view.approvals_received, op.view.approvals_required
        ));
        // Core's reasons are said in core's words; a provider's error code as it came.
        let why = r
            .status_reason
            .or(op.latest_reason)
            .map(reason_in_words)
            .or_else(|| r.error_code.as_deref().map(reveal));
        let shown = headline_shown(headline_naming_payee(
            r.action,
            r.target.as_deref(),
            &r.payload,
            r.payee.as_ref(),
        ));
        Card {
            id: r.operation_id.to_string(),
            tenant: reveal(&r.tenant_id),
            tenant_query: tenant_query(&r.tenant_id),
            headline: shown.one_line,
            said: shown.said,
            payee_name: shown.payee_name,
            payee_under: shown.payee_under,
            quoted: shown.quoted,
            action: reveal(r.action.wire_name()),
            status: r.status,
            approval_status: r.approval_status,
            status_words: status_in_words(r.status, r.approval_status, r.escalated_at.is_some()),
            approval_words: approval_in_words(r.approval_status),
            pending,
            expiry: expiry_in_words(op.expires_in_s),
            deadline: instant_in_words(r.approval_expires_at),
            risks: risks_in_words(op),
            submitted_by: op
                .view
                .submitted_by
                .as_deref()
                .map(reveal)
                .unwrap_or_else(|| "the intents queue".into()),
            submitter: op.view.submitted_by.clone(),
            quorum,
            escalated: r.escalated_at.is_some(),
            why,
            created_at: r.created_at.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        }
    }
}

/// `tenant=<tenant>`, percent-encoded, for a console link or form of one operation.
pub fn tenant_query(tenant: &str) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .append_pair("tenant", tenant)
        .finish()
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
    /// The payee is who pays (a charge's saved card or account), not who is paid.
    pub charged: bool,
    /// The check of the intent's name for the payee against the account's holder, as
    /// kept at intake.
    pub name_check: Option<NameCheckShown>,
}

/// The payee name check beside the name, in a bank's words.
pub struct NameCheckShown {
    /// `match`, `close_match`, `no_match`, `not_possible`: the element's class.
    pub result: &'static str,
    /// "The name matches the account holder", "Close match: the account is held by
    /// "Acme Supplies Ltd"", …
    pub words: String,
    /// The name the intent gave, revealed (the template quotes it).
    pub asked: Option<String>,
}

impl NameCheckShown {
    fn of(check: &NameCheck) -> NameCheckShown {
        let held = check.held.as_deref().map(quote);
        NameCheckShown {
            result: check.result.as_str(),
            words: check.in_words(held.as_deref()),
            asked: check.asked.as_deref().map(reveal),
        }
    }
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
                ..
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
        // The directory's words are a provider's free text: shown, never interpreted.
        Some(PayeeShown {
            id: reveal(&id),
            found: evidence.found().map(|p| PayeeFound {
                name: reveal(&p.name),
                country: reveal(&p.country),
                account: reveal(&p.account.masked),
                verified: p.verified,
                version: p.version,
            }),
            unknown_why,
            looked_up_at: format!("{} UTC", at(looked_up_at)),
            changed: r.status_reason == Some(Precondition::Payee.reason()),
            charged: r.action.spec().payee == Some(fleet_core::stripe::charge::PAYER_MEMBER),
            name_check: evidence.name_check().map(NameCheckShown::of),
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
            target: shown(&r.target),
            payload_hash: r.payload_hash.to_string(),
            canonical_json: reveal(&canonical_json(&r.snapshot().to_json())),
            policy_version: reveal(&r.policy_version),
            data_version: reveal(&r.data_version),
            rationale: shown(&r.rationale).filter(|s| !s.is_empty()),
            supersedes: shown(&r.supersedes),
            decided_by: shown(&r.decided_by),
            decided_at: r.decided_at.map(|t| format!("{} UTC", at(t))),
            external_id: shown(&r.external_id),
            error_code: shown(&r.error_code),
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
        if r.action != Action::CrmDealUpdate {
            return None;
        }
        let patch = r.payload.get("patch")?.as_object()?;
        let (deal, unavailable) = match current {
            Ok(Some(deal)) => (Some(deal), None),
            Ok(None) => (None, Some("the CRM has no such deal".to_owned())),
            Err(e) => (
                None,
                Some(reveal(&format!("the CRM could not be read ({e})"))),
            ),
        };
        // Amounts are shown in the currency the deal will have (the patch's, else the
        // deal's as the CRM holds it), and as it has now.
        let text_of = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let current_currency = deal.as_ref().and_then(|d| text_of(d.get("currency")));
        let new_currency = text_of(patch.get("currency")).or_else(|| current_currency.clone());
        let mut lines: Vec<PatchLine> = patch
            .iter()
            .map(|(k, v)| PatchLine {
                field: reveal(&patch_field_in_words(k)),
                new_value: reveal(&patch_value_in_words(k, v, new_currency.as_deref())),
                current: deal.as_ref().map_or_else(
                    || "?".to_owned(),
                    |d| {
                        d.get(k).map_or_else(
                            || "nothing".to_owned(),
                            |now| {
                                reveal(&patch_value_in_words(k, now, current_currency.as_deref()))
                            },
                        )
                    },
                ),
            })
            .collect();
        lines.sort_by(|a, b| a.field.cmp(&b.field));
        Some(DealChange {
            deal_id: shown(&r.target).unwrap_or_default(),
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
        let word = |s: &Status| status_word(s.as_str());
        let change = match (&e.from_status, &e.to_status) {
            (Some(f), Some(t)) if f != t => format!("{} → {}", word(f), word(t)),
            (_, Some(t)) => word(t),
            _ => String::new(),
        };
        EventLine {
            at: at(e.at),
            kind: reveal(e.kind.as_str()),
            change: reveal(&change),
            actor: reveal(&e.actor),
            reason: e.reason.map(reason_in_words).unwrap_or_default(),
            evidence: e
                .evidence
                .as_ref()
                .map(|v| reveal(&v.to_string()))
                .unwrap_or_default(),
        }
    }
}

/// The step-up an approval of `op` needs, and for re-typing, the amount (in minor units,
/// its currency, and as the page shows it).
pub fn step_up_of(op: &ConsoleOperation) -> (StepUp, Option<(i64, String, String)>) {
    let r = &op.row;
    let has_amount = r.action.spec().has_amount;
    let required = op.view.approvals_required;
    let step = StepUp::of(required, r.signatures_required, has_amount);
    let amount = r.payload.get("amount_minor").and_then(Value::as_i64);
    let currency = r.payload.get("currency").and_then(Value::as_str);
    let shown = amount
        .zip(currency)
        .and_then(|(m, c)| Some((m, c.to_owned(), format_amount(m, c)?)));
    (step, shown)
}

/// What the approver is told of objects the operation names that the fleet has no record
/// of (`unrecorded`: each with its id): nothing ties them to the tenant, so the approver
/// checks they are its own; the quorum shown already counts what the policy asks.
pub fn foreign_object_note(
    op: &ConsoleOperation,
    unrecorded: &[(ObjectRef, String)],
) -> Option<String> {
    if unrecorded.is_empty() {
        return None;
    }
    let named: Vec<String> = unrecorded
        .iter()
        .map(|(object, id)| format!("the {} {id}", object.kind))
        .collect();
    Some(format!(
        "{} was not made by the fleet: nothing in its records ties it to {}. Check that it is this tenant's before approving ({} approvals needed).",
        capitalised(&named.join(" and ")),
        op.row.tenant_id,
        op.view.approvals_required
    ))
}

fn capitalised(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// The operation's risk cues in words, as its view carries them (none for an operation
/// that is no payment, or one without cues).
fn risks_in_words(op: &ConsoleOperation) -> Vec<String> {
    let currency = op
        .row
        .payload
        .get("currency")
        .and_then(Value::as_str)
        .unwrap_or("");
    op.view
        .risk
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|cue| cue.in_words(currency))
        .collect()
}

/// A stored status token as a word ("in_progress" → "in progress").
fn status_word(token: &str) -> String {
    token.replace('_', " ")
}

/// Who approved already, beside the decision buttons.
pub struct ApprovalLine {
    pub principal: String,
    /// "19:02 UTC on 1 Dec 2026".
    pub at: String,
    /// "signed with a key", "signed in with the console", …
    pub how: String,
}

impl ApprovalLine {
    pub fn of(a: &ApprovalGiven) -> ApprovalLine {
        let how = match (a.signed, a.signed_in_with.as_str()) {
            (true, "oidc") => "in the console, signed with a passkey",
            (true, _) => "signed with their key",
            (false, "oidc") => "in the console",
            (false, _) => "with an API token",
        };
        ApprovalLine {
            principal: reveal(&a.principal),
            at: instant_in_words(a.at),
            how: how.to_owned(),
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
            worker: reveal(&a.worker),
            started_at: at(a.started_at),
            finished_at: a.finished_at.map(at).unwrap_or_else(|| "—".into()),
            outcome: a
                .outcome
                .map_or("no answer recorded", AttemptOutcome::as_str)
                .to_owned(),
            http_status: a.http_status.map(|s| s.to_string()).unwrap_or_default(),
            external_id: shown(&a.external_id).unwrap_or_default(),
            provider_request_id: shown(&a.provider_request_id).unwrap_or_default(),
            answer: reveal(&answer),
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
    /// What `p` may do on this page, as `fleet_core::authz` decides for the API's routes
    /// (the same role, tenant and maker-checker rules), and what the operation's state
    /// leaves to do at all.
    pub fn of(p: &Principal, card: &Card) -> Allowed {
        let actor = Actor {
            name: &p.name,
            role: p.role,
            tenants: &p.tenants,
        };
        let facts = OperationFacts {
            tenant_id: &card.tenant,
            submitted_by: card.submitter.as_deref(),
        };
        let may = |what| authz::may_act_on(&actor, what, Some(&facts));
        let approve_why_not = match may(OperationAction::Approve) {
            _ if !card.pending => None,
            Ok(()) => None,
            Err(Denial::RoleNotAllowed) => Some(format!(
                "Your role ({}) does not approve or reject.",
                p.role
            )),
            Err(Denial::SubmitterCannotApprove) => {
                Some("You submitted this operation: another person must approve it.".to_owned())
            }
            // Only the database's answer says this (the session's view cannot know).
            Err(Denial::NotRecordedApprover) => Some(
                "The deployment's records do not make you an approver of this tenant.".to_owned(),
            ),
            Err(Denial::NotFound | Denial::TenantNotGranted | Denial::Ambiguous) => {
                Some("This operation is not in your tenants.".to_owned())
            }
        };
        let settleable = matches!(
            card.status,
            Status::Unknown | Status::Accepted | Status::Disputed
        ) || card.escalated;
        let final_for_workers = card.status.is_final();
        Allowed {
            approve: card.pending && approve_why_not.is_none(),
            approve_why_not,
            resolve: may(OperationAction::Resolve).is_ok() && settleable,
            dispute: may(OperationAction::Dispute).is_ok() && !final_for_workers,
        }
    }
}
