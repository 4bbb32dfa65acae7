//! The payee name check (Verification of Payee, Confirmation of Payee): whether the name
//! the intent gives for a payment's beneficiary is the name of the account's holder, as
//! the provider's directory answers it beside the payee (docs/protocol.md#payee-directory).
//!
//! Four results, as banks give them: `match`, `close_match` (with the name the account is
//! held under), `no_match`, `not_possible`. The result is frozen into the payee evidence
//! at intake: a later change in the directory does not change what the approver saw.
//! Pure: the directory's answer and the name asked are inputs.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalogue::Action;
use crate::risk::RiskCue;

/// The payload member that gives the payee's name to check: `payment.create`'s, the one
/// action whose payee's name is checked.
pub const NAME_MEMBER: &str = "beneficiary_name";

/// Whether `action`'s payee name is checked (`Some`), and the name its payload gives.
pub fn asked_name(action: Action, payload: &Value) -> Option<Option<&str>> {
    (action == Action::PaymentCreate).then(|| payload.get(NAME_MEMBER).and_then(Value::as_str))
}

/// The longest name kept (the intent's or the directory's): the same bound as the payee's
/// name in the evidence.
const MAX_NAME_CHARS: usize = 200;

/// The directory's verdict on the name asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NameResult {
    Match,
    CloseMatch,
    NoMatch,
    NotPossible,
}

impl NameResult {
    pub fn as_str(self) -> &'static str {
        match self {
            NameResult::Match => "match",
            NameResult::CloseMatch => "close_match",
            NameResult::NoMatch => "no_match",
            NameResult::NotPossible => "not_possible",
        }
    }

    fn parse(text: &str) -> Option<NameResult> {
        [
            NameResult::Match,
            NameResult::CloseMatch,
            NameResult::NoMatch,
            NameResult::NotPossible,
        ]
        .into_iter()
        .find(|r| r.as_str() == text)
    }
}

/// Why a name could not be checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotCheckedWhy {
    /// The intent gives no name to check.
    NoName,
    /// The directory does not check names (Stripe's connected accounts), or answered
    /// without a result of the documented shape.
    NotOffered,
    /// The directory answered `not_possible` (the account's bank takes no part).
    Directory,
}

/// One name check, as kept in the payee evidence (`operations.payee.name_check`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NameCheck {
    pub result: NameResult,
    /// The name the intent gave (`payload.beneficiary_name`); `None`: it gave none.
    pub asked: Option<String>,
    /// For a `close_match`: the name the account is held under, as the directory said it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
    /// For a `not_possible`: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<NotCheckedWhy>,
}

impl NameCheck {
    /// The check of `asked` by a directory whose payee answer is `answer` (its
    /// `name_check` member: `{"result", "name"?}`); `answer` is `None` for a directory
    /// that checks no names.
    pub fn judge(asked: Option<&str>, answer: Option<&Value>) -> NameCheck {
        let not_possible = |why| NameCheck {
            result: NameResult::NotPossible,
            asked: asked.map(str::to_owned),
            held: None,
            why: Some(why),
        };
        let Some(asked) = asked else {
            return not_possible(NotCheckedWhy::NoName);
        };
        let Some(check) = answer.and_then(|a| a.get("name_check")) else {
            return not_possible(NotCheckedWhy::NotOffered);
        };
        let result = check
            .get("result")
            .and_then(Value::as_str)
            .and_then(NameResult::parse);
        let held = check
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty() && n.chars().count() <= MAX_NAME_CHARS);
        match (result, held) {
            (Some(NameResult::CloseMatch), Some(held)) => NameCheck {
                result: NameResult::CloseMatch,
                asked: Some(asked.to_owned()),
                held: Some(held.to_owned()),
                why: None,
            },
            // A close match that does not say the name held is no answer an approver can use.
            (Some(NameResult::CloseMatch), None) | (None, _) => {
                not_possible(NotCheckedWhy::NotOffered)
            }
            (Some(NameResult::NotPossible), _) => not_possible(NotCheckedWhy::Directory),
            (Some(result), _) => NameCheck {
                result,
                asked: Some(asked.to_owned()),
                held: None,
                why: None,
            },
        }
    }

    /// Whether the intent gave a name and the directory could not say it is the holder's:
    /// what raises a risk cue and what a policy's `name_check` table judges. An intent
    /// that gives no name is judged by the table's `no_name` alone.
    pub fn doubted(&self) -> bool {
        self.result != NameResult::Match && self.asked.is_some()
    }

    /// The risk cue the check raises: on every result but a match, for a name given.
    pub fn cue(&self) -> Option<RiskCue> {
        self.doubted().then_some(RiskCue::PayeeNameUnconfirmed {
            result: self.result,
        })
    }

    /// The check as a bank says it, beside the name. Names are free text: the caller
    /// quotes and reveals them (`held` is passed already quoted).
    pub fn in_words(&self, held_quoted: Option<&str>) -> String {
        match (self.result, self.why) {
            (NameResult::Match, _) => "The name matches the account holder".to_owned(),
            (NameResult::CloseMatch, _) => format!(
                "Close match: the account is held by {}",
                held_quoted.unwrap_or("another name")
            ),
            (NameResult::NoMatch, _) => "The name does not match the account holder".to_owned(),
            (NameResult::NotPossible, Some(NotCheckedWhy::NoName)) => {
                "The name could not be checked: the intent gives none".to_owned()
            }
            (NameResult::NotPossible, _) => "The name could not be checked".to_owned(),
        }
    }

    pub fn from_json(value: &Value) -> Option<NameCheck> {
        serde_json::from_value(value.clone()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(check: Value) -> Value {
        json!({"id": "vendor_77", "name_check": check})
    }

    #[test]
    fn each_result_of_the_directory_is_kept_with_the_name_asked() {
        let m = NameCheck::judge(
            Some("Vendor 77 LLP"),
            Some(&answer(json!({"result": "match"}))),
        );
        assert_eq!(
            (m.result, m.asked.as_deref()),
            (NameResult::Match, Some("Vendor 77 LLP"))
        );
        assert!(!m.doubted());
        let close = NameCheck::judge(
            Some("Vendor 77"),
            Some(&answer(
                json!({"result": "close_match", "name": "Vendor 77 LLP"}),
            )),
        );
        assert_eq!(close.result, NameResult::CloseMatch);
        assert_eq!(close.held.as_deref(), Some("Vendor 77 LLP"));
        assert!(close.doubted());
        let no = NameCheck::judge(
            Some("Mallory"),
            Some(&answer(json!({"result": "no_match"}))),
        );
        assert_eq!((no.result, no.held), (NameResult::NoMatch, None));
        let np = NameCheck::judge(Some("X"), Some(&answer(json!({"result": "not_possible"}))));
        assert_eq!(
            (np.result, np.why),
            (NameResult::NotPossible, Some(NotCheckedWhy::Directory))
        );
    }

    #[test]
    fn no_name_or_no_answer_is_not_possible() {
        let none = NameCheck::judge(None, Some(&answer(json!({"result": "match"}))));
        assert_eq!(
            (none.result, none.why),
            (NameResult::NotPossible, Some(NotCheckedWhy::NoName))
        );
        assert!(!none.doubted(), "judged by the policy's no_name alone");
        for odd in [
            None,
            Some(json!({"id": "v"})),
            Some(answer(json!({"result": "maybe"}))),
            Some(answer(json!({"result": "close_match"}))),
            Some(answer(
                json!({"result": "close_match", "name": "x".repeat(201)}),
            )),
        ] {
            let c = NameCheck::judge(Some("Acme"), odd.as_ref());
            assert_eq!(
                (c.result, c.why),
                (NameResult::NotPossible, Some(NotCheckedWhy::NotOffered)),
                "{odd:?}"
            );
            assert!(c.doubted());
        }
    }

    #[test]
    fn the_words_are_a_banks() {
        let of = |result| NameCheck {
            result,
            asked: Some("a".into()),
            held: None,
            why: None,
        };
        assert_eq!(
            of(NameResult::Match).in_words(None),
            "The name matches the account holder"
        );
        assert_eq!(
            of(NameResult::CloseMatch).in_words(Some("\"Acme Supplies Ltd\"")),
            "Close match: the account is held by \"Acme Supplies Ltd\""
        );
        assert_eq!(
            of(NameResult::NoMatch).in_words(None),
            "The name does not match the account holder"
        );
        assert_eq!(
            of(NameResult::NotPossible).in_words(None),
            "The name could not be checked"
        );
    }

    #[test]
    fn the_kept_shape_reads_back() {
        let c = NameCheck::judge(
            Some("Vendor 77"),
            Some(&answer(
                json!({"result": "close_match", "name": "Vendor 77 LLP"}),
            )),
        );
        let kept = serde_json::to_value(&c).unwrap();
        assert_eq!(
            kept,
            json!({"result": "close_match", "asked": "Vendor 77", "held": "Vendor 77 LLP"})
        );
        assert_eq!(NameCheck::from_json(&kept), Some(c));
    }
}
