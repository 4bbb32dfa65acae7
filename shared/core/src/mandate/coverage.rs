//! "Am I covered?": whether a standing mandate would approve an operation, and if not,
//! why. One rule for the two moments it is asked: an agent asks before it proposes (it
//! knows the action, the payee's id, the amount and the currency), and execute's claim
//! judges the stored operation (`Mandate::covers`, which the database's
//! `fleet_mandate_covers` mirrors; a table test runs the same cases through both).
//!
//! What an agent's question cannot settle is said, not guessed: a listed payee is
//! covered only while its account is the one signed, and "any verified payee" only once
//! the directory verified it, both looked up at intake; risk cues and a quorum raised by
//! an unknown payee are found at intake too. A "yes" names those as its conditions.
//! Pure: the mandates with what is left of them, the policy's rule and the clock are
//! inputs.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{Mandate, MandatePayees, MandateStanding};
use crate::catalogue::Action;

/// The payee as far as it is known when coverage is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayeeFacts<'a> {
    /// Only its id: the question is asked before intake looked it up.
    Named(&'a str),
    /// As intake's directory lookup found it.
    Found {
        id: &'a str,
        fingerprint: &'a str,
        verified: bool,
    },
    /// Not found by the directory, or not known at all.
    Unknown,
}

/// What coverage is judged on.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub tenant_id: &'a str,
    pub action: Action,
    pub amount_minor: Option<i64>,
    pub currency: Option<&'a str>,
    /// Who proposes it (the principal an intent would be submitted by).
    pub submitted_by: Option<&'a str>,
    pub payee: PayeeFacts<'a>,
}

/// Why a mandate does not cover an operation, first failing check first: the order an
/// answer reports them in (the mandate that got furthest names the reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Gap {
    /// Another tenant's (never shown to a caller, kept for the rule's completeness).
    OtherTenant,
    /// Made for another principal's intents.
    NotForYou,
    /// It does not name this action.
    ActionNotCovered,
    /// Revoked by its signer or an admin.
    Revoked,
    /// Before its `valid_from` or at or after its `valid_until`.
    OutsideWindow,
    /// Another currency than the mandate's.
    OtherCurrency,
    /// No amount, or above the mandate's most for one operation.
    AbovePerOperationMax,
    /// The payee is not one it may pay (not listed, another account, not verified).
    PayeeNotAllowed,
    /// More than what is left of its budget.
    OverRemainingBudget,
    /// Its count of operations is used up.
    OverRemainingCount,
}

impl Gap {
    pub fn code(self) -> &'static str {
        match self {
            Gap::OtherTenant => "other_tenant",
            Gap::NotForYou => "not_for_you",
            Gap::ActionNotCovered => "action_not_covered",
            Gap::Revoked => "revoked",
            Gap::OutsideWindow => "outside_window",
            Gap::OtherCurrency => "other_currency",
            Gap::AbovePerOperationMax => "above_per_operation_max",
            Gap::PayeeNotAllowed => "payee_not_allowed",
            Gap::OverRemainingBudget => "over_remaining_budget",
            Gap::OverRemainingCount => "over_remaining_count",
        }
    }
}

/// What the policy in force says of a mandate approving the operation, as far as it can
/// be judged before the intent exists (`fleet_mandate_may_approve` judges the rest at
/// claim: risk cues, a quorum raised at intake).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyBar {
    /// No policy is in force for the tenant and action.
    NoPolicy,
    /// The policy does not let a mandate approve this action (`mandates` is not
    /// `"below_bands"`, or it asks more than one approver).
    MandatesNotAllowed,
    /// The amount is at or above the lowest band of its currency (from this amount a
    /// person approves), or the policy bands amounts but not in this currency.
    AboveBand { from_amount_minor: Option<i64> },
}

impl PolicyBar {
    pub fn code(self) -> &'static str {
        match self {
            PolicyBar::NoPolicy => "no_policy_in_force",
            PolicyBar::MandatesNotAllowed => "policy_allows_no_mandate",
            PolicyBar::AboveBand { .. } => "policy_band_needs_a_person",
        }
    }
}

/// Whether the policy rule of the action (one action's entry of `policies.rules`:
/// `{"approvers", "mandates", "bands": {"KZT": [{"from_amount_minor", …}]}}`) lets a
/// mandate approve `amount_minor` in `currency`: the same reading as
/// `fleet_mandate_may_approve` of what it reads from the policy.
pub fn policy_lets_a_mandate_approve(
    rule: Option<&Value>,
    amount_minor: i64,
    currency: &str,
) -> Result<(), PolicyBar> {
    let rule = rule.filter(|r| r.is_object()).ok_or(PolicyBar::NoPolicy)?;
    if rule.get("mandates").and_then(Value::as_str) != Some("below_bands")
        || rule.get("approvers").and_then(Value::as_i64) != Some(1)
    {
        return Err(PolicyBar::MandatesNotAllowed);
    }
    let bands = rule.get("bands").and_then(Value::as_object);
    if bands.is_none_or(|b| b.is_empty()) {
        return Ok(());
    }
    let lowest = bands
        .and_then(|b| b.get(currency))
        .and_then(Value::as_array)
        .and_then(|list| {
            list.iter()
                .filter_map(|b| b.get("from_amount_minor").and_then(Value::as_i64))
                .min()
        });
    match lowest {
        Some(from) if amount_minor < from => Ok(()),
        from => Err(PolicyBar::AboveBand {
            from_amount_minor: from,
        }),
    }
}

impl Mandate {
    /// The first check of what was signed that `s` fails (`None`: covered by what was
    /// signed; the window, the budget and the count are [`Mandate::judge`]'s). A payee
    /// known only by its id passes where its id is listed (or any verified payee is
    /// allowed): the rest is a condition of the answer.
    pub fn first_gap(&self, s: &Subject<'_>) -> Option<Gap> {
        if s.tenant_id != self.tenant_id {
            return Some(Gap::OtherTenant);
        }
        if self
            .for_principal
            .as_deref()
            .is_some_and(|p| s.submitted_by != Some(p))
        {
            return Some(Gap::NotForYou);
        }
        if !self.actions.contains(&s.action) {
            return Some(Gap::ActionNotCovered);
        }
        if s.currency != Some(self.currency.as_str()) {
            return Some(Gap::OtherCurrency);
        }
        if !s
            .amount_minor
            .is_some_and(|a| (1..=self.per_operation_max_minor).contains(&a))
        {
            return Some(Gap::AbovePerOperationMax);
        }
        let payee_ok = match (&self.payees, s.payee) {
            (_, PayeeFacts::Unknown) => false,
            (MandatePayees::AnyVerified, PayeeFacts::Named(_)) => true,
            (MandatePayees::AnyVerified, PayeeFacts::Found { verified, .. }) => verified,
            (MandatePayees::Listed(list), PayeeFacts::Named(id)) => list.iter().any(|m| m.id == id),
            (
                MandatePayees::Listed(list),
                PayeeFacts::Found {
                    id, fingerprint, ..
                },
            ) => list
                .iter()
                .any(|m| m.id == id && m.account_fingerprint == fingerprint),
        };
        if !payee_ok {
            return Some(Gap::PayeeNotAllowed);
        }
        None
    }

    /// The whole judgement of one mandate, as it stands at `now`: what was signed, its
    /// revocation and window, then what is left of its budget and count.
    pub fn judge(
        &self,
        standing: MandateStanding,
        s: &Subject<'_>,
        now: DateTime<Utc>,
    ) -> Result<(), Gap> {
        let before_window = [Gap::OtherTenant, Gap::NotForYou, Gap::ActionNotCovered];
        match self.first_gap(s) {
            Some(gap) if before_window.contains(&gap) => return Err(gap),
            _ if standing.revoked => return Err(Gap::Revoked),
            _ if !self.in_window(now) => return Err(Gap::OutsideWindow),
            Some(gap) => return Err(gap),
            None => {}
        }
        let amount = s.amount_minor.unwrap_or(i64::MAX);
        if amount > standing.available_minor() {
            return Err(Gap::OverRemainingBudget);
        }
        if standing.used_count >= standing.count_limit {
            return Err(Gap::OverRemainingCount);
        }
        Ok(())
    }
}

/// The answer to "am I covered?".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Coverage {
    /// `mandate_id` would approve it, leaving this much of its budget and count.
    Covered {
        mandate_id: String,
        available_after_minor: i64,
        count_left_after: i64,
        /// What intake and the claim judge that the question could not.
        conditions: Vec<&'static str>,
    },
    /// No mandate would: the reason of the mandate that came closest (`mandate_id`), or
    /// none active for the action at all.
    NotCovered {
        reason: &'static str,
        mandate_id: Option<String>,
        /// For `policy_band_needs_a_person`: the amount from which a person approves.
        from_amount_minor: Option<i64>,
    },
}

impl Coverage {
    pub fn to_json(&self) -> Value {
        match self {
            Coverage::Covered {
                mandate_id,
                available_after_minor,
                count_left_after,
                conditions,
            } => json!({
                "covered": true,
                "mandate_id": mandate_id,
                "available_after_minor": available_after_minor,
                "count_left_after": count_left_after,
                "conditions": conditions,
            }),
            Coverage::NotCovered {
                reason,
                mandate_id,
                from_amount_minor,
            } => {
                let mut v = json!({"covered": false, "reason": reason, "mandate_id": mandate_id});
                if let Some(from) = from_amount_minor {
                    v["from_amount_minor"] = json!(from);
                }
                v
            }
        }
    }
}

/// The reason a question with no mandate to judge is answered with.
pub const NONE_ACTIVE: &str = "no_active_mandate";

/// Whether any of `mandates` (with what is left of each) would approve `s` at `now`
/// under the policy rule `rule`. Mandates are tried in the order the claim tries them:
/// the soonest to end first, then by id.
pub fn coverage(
    mandates: &[(Mandate, MandateStanding)],
    rule: Option<&Value>,
    s: &Subject<'_>,
    now: DateTime<Utc>,
) -> Coverage {
    let mut order: Vec<&(Mandate, MandateStanding)> = mandates.iter().collect();
    order.sort_by(|a, b| {
        (a.0.valid_until, &a.0.mandate_id).cmp(&(b.0.valid_until, &b.0.mandate_id))
    });
    let mut closest: Option<(Gap, &Mandate)> = None;
    for (mandate, standing) in order {
        match mandate.judge(*standing, s, now) {
            Ok(()) => {
                let amount = s.amount_minor.unwrap_or_default();
                if let Err(bar) =
                    policy_lets_a_mandate_approve(rule, amount, s.currency.unwrap_or_default())
                {
                    return Coverage::NotCovered {
                        reason: bar.code(),
                        mandate_id: Some(mandate.mandate_id.clone()),
                        from_amount_minor: match bar {
                            PolicyBar::AboveBand { from_amount_minor } => from_amount_minor,
                            _ => None,
                        },
                    };
                }
                let mut conditions = vec!["no_risk_cue_at_intake", "one_approver_at_intake"];
                if matches!(s.payee, PayeeFacts::Named(_)) {
                    conditions.insert(
                        0,
                        match mandate.payees {
                            MandatePayees::AnyVerified => "payee_verified_at_intake",
                            MandatePayees::Listed(_) => "payee_account_as_signed_at_intake",
                        },
                    );
                }
                return Coverage::Covered {
                    mandate_id: mandate.mandate_id.clone(),
                    available_after_minor: standing.available_minor() - amount,
                    count_left_after: standing.count_limit - standing.used_count - 1,
                    conditions,
                };
            }
            // Another tenant's or another agent's mandate says nothing to this caller.
            Err(Gap::OtherTenant | Gap::NotForYou) => {}
            Err(gap) => {
                if closest.is_none_or(|(g, _)| gap > g) {
                    closest = Some((gap, mandate));
                }
            }
        }
    }
    match closest {
        // A mandate of another action is no mandate for this question.
        None | Some((Gap::ActionNotCovered, _)) => Coverage::NotCovered {
            reason: NONE_ACTIVE,
            mandate_id: None,
            from_amount_minor: None,
        },
        Some((gap, mandate)) => Coverage::NotCovered {
            reason: gap.code(),
            mandate_id: Some(mandate.mandate_id.clone()),
            from_amount_minor: None,
        },
    }
}

#[cfg(test)]
mod tests;
