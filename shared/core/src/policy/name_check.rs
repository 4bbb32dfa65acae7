//! What a policy does with a payment by the result of its payee name check
//! (`crate::payee::name_check`): the table `[actions."payment.create".name_check]`.
//!
//! ```toml
//! [actions."payment.create".name_check]
//! close_match = "extra_approver"
//! not_possible = "extra_approver"
//! no_match = "refuse"
//! no_name = "allow"
//! ```
//!
//! Each key is `"allow"` (the default: the result is shown and changes nothing),
//! `"extra_approver"` (one more distinct approver than the payment needs otherwise) or
//! `"refuse"` (refused at intake, `payee_name_mismatch`). `no_name` judges an intent that
//! gives no name to check; the three others judge the directory's answer to a name given.
//! Without the table every result is allowed.

use serde::Deserialize;

use crate::payee::{NameCheck, NameResult, NotCheckedWhy};

/// What one result of the check leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NameStep {
    #[default]
    Allow,
    ExtraApprover,
    Refuse,
}

impl NameStep {
    pub fn as_str(self) -> &'static str {
        match self {
            NameStep::Allow => "allow",
            NameStep::ExtraApprover => "extra_approver",
            NameStep::Refuse => "refuse",
        }
    }
}

/// The `name_check` table of one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NameCheckRule {
    #[serde(default)]
    pub close_match: NameStep,
    #[serde(default)]
    pub no_match: NameStep,
    #[serde(default)]
    pub not_possible: NameStep,
    #[serde(default)]
    pub no_name: NameStep,
}

impl NameCheckRule {
    /// The step for `check`: `None` (no check made: an unknown payee, an action that names
    /// no payee) is allowed, since other rules (`unknown_payee`) judge those.
    pub fn step(&self, check: Option<&NameCheck>) -> NameStep {
        let Some(check) = check else {
            return NameStep::Allow;
        };
        match (check.result, check.why) {
            (NameResult::Match, _) => NameStep::Allow,
            (NameResult::CloseMatch, _) => self.close_match,
            (NameResult::NoMatch, _) => self.no_match,
            (NameResult::NotPossible, Some(NotCheckedWhy::NoName)) => self.no_name,
            (NameResult::NotPossible, _) => self.not_possible,
        }
    }

    /// The table as the database keeps it (`policies.rules -> action -> 'name_check'`):
    /// each key's step by name.
    pub(crate) fn rules(&self) -> serde_json::Value {
        serde_json::json!({
            "close_match": self.close_match.as_str(),
            "no_match": self.no_match.as_str(),
            "not_possible": self.not_possible.as_str(),
            "no_name": self.no_name.as_str(),
        })
    }

    /// (approvers) a payment whose check is `check` needs, given what it needs otherwise;
    /// `None`: refused.
    pub fn approvers(&self, check: Option<&NameCheck>, approvers: u8) -> Option<u8> {
        match self.step(check) {
            NameStep::Allow => Some(approvers),
            NameStep::ExtraApprover => Some(
                approvers
                    .saturating_add(1)
                    .min(crate::policy::MAX_APPROVERS),
            ),
            NameStep::Refuse => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(result: &str) -> NameCheck {
        NameCheck::judge(
            Some("Acme"),
            Some(&json!({"name_check": {"result": result, "name": "Acme Ltd"}})),
        )
    }

    #[test]
    fn each_result_takes_its_step_and_a_match_is_always_allowed() {
        let rule: NameCheckRule = toml::from_str(
            "close_match = \"extra_approver\"\nnot_possible = \"extra_approver\"\nno_match = \"refuse\"\n",
        )
        .unwrap();
        assert_eq!(rule.approvers(Some(&check("match")), 1), Some(1));
        assert_eq!(rule.approvers(Some(&check("close_match")), 1), Some(2));
        assert_eq!(rule.approvers(Some(&check("not_possible")), 2), Some(3));
        assert_eq!(rule.approvers(Some(&check("no_match")), 1), None);
        let unnamed = NameCheck::judge(None, None);
        assert_eq!(rule.approvers(Some(&unnamed), 1), Some(1), "no_name allows");
        assert_eq!(rule.approvers(None, 1), Some(1));
        assert_eq!(rule.approvers(Some(&check("close_match")), 10), Some(10));
    }

    /// The shipped policy in force, payments-v3, refuses a name that does not match and
    /// asks one more approver for a close match or a name not checked.
    #[test]
    fn the_shipped_payment_policies_judge_names() {
        let v3 = crate::policy::Policy::parse(
            "payments-v3",
            include_str!("../../../policies/payments-v3.toml"),
        )
        .unwrap()
        .name_check(crate::Action::PaymentCreate)
        .unwrap();
        assert_eq!(
            (v3.close_match, v3.not_possible, v3.no_match, v3.no_name),
            (
                NameStep::ExtraApprover,
                NameStep::ExtraApprover,
                NameStep::Refuse,
                NameStep::Allow
            )
        );
        assert_eq!(
            crate::policy::Policy::parse(
                "payments-v3",
                include_str!("../../../policies/payments-v3.toml")
            )
            .unwrap()
            .rules()["payment.create"]["name_check"]["no_match"],
            "refuse"
        );
    }

    #[test]
    fn without_the_table_everything_is_allowed_and_unknown_words_are_refused() {
        let none = NameCheckRule::default();
        assert_eq!(none.approvers(Some(&check("no_match")), 1), Some(1));
        assert!(toml::from_str::<NameCheckRule>("no_match = \"ignore\"").is_err());
        assert!(toml::from_str::<NameCheckRule>("mismatch = \"refuse\"").is_err());
    }
}
