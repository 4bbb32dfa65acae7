//! An operation's headline: what a person reads first, and what an approver signs as the
//! statement's `summary`. Its sentence is built from typed values only (the action, the
//! amount formatted from its minor units and currency, ids the identifier rule admitted),
//! so nothing an agent wrote can sit inside it. Free text (a deal's name, a refund's
//! reason, a patch's values) follows it, each piece under the name of the member it came
//! from, quoted and set apart: a deal named `x" worth 10.00 KZT…` cannot make the
//! sentence say another amount before the real one.
//!
//! The console shows the sentence as the headline's own text and each quoted piece in an
//! element of its own ([`Headline::said`], [`Headline::quoted`]); plain text (the signed
//! statement, `fleetctl`) writes them one after the other ([`Headline::plain`]).

use unicode_security::skeleton;

use crate::visible::{code_point, reveal};

/// The headline of one operation: a sentence of typed values, then free text quoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Headline {
    /// "Pay 12,500.00 KZT to vendor_77 for invoice inv_9182": the action, the amount and
    /// who receives it first, every value typed.
    pub said: String,
    /// The free text the payload carries, in the order the action gives.
    pub quoted: Vec<Quoted>,
    /// Who is paid, by the name the provider's directory holds, when the headline names
    /// them (`crate::wording::headline_naming_payee`): the sentence then ends "… to" and
    /// the name follows it.
    pub payee: Option<PayeeNamed>,
}

/// The payee a headline names: the directory's name (free text, quoted wherever it is
/// shown) and, below it, the payee's id, masked account and what the payment is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayeeNamed {
    pub name: String,
    /// "vendor_77, account KZ•• •••• •••• 1234, for invoice inv_9182".
    pub under: String,
}

/// One piece of free text, as it came (revealing and quoting are the reader's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quoted {
    /// The payload member it came from (`name`, `reason`), a fixed word of the action.
    pub member: &'static str,
    pub text: String,
}

/// What separates the sentence from the free text in plain text. The sentence holds typed
/// values only, none of which can contain it.
pub const FREE_TEXT_MARK: &str = " — free text: ";

impl Headline {
    /// A headline of `said`, typed values only, without free text yet.
    pub fn new(said: impl Into<String>) -> Headline {
        Headline {
            said: said.into(),
            quoted: Vec::new(),
            payee: None,
        }
    }

    /// The headline with `text`, the payload's member `member`, quoted after the sentence.
    pub fn quoting(mut self, member: &'static str, text: impl Into<String>) -> Headline {
        self.quoted.push(Quoted {
            member,
            text: text.into(),
        });
        self
    }

    /// The headline as one line of plain text: the sentence, then, after
    /// [`FREE_TEXT_MARK`], each piece of free text as `member "text"` ([`quote`]):
    ///
    /// `Create a deal worth 50,000,000.00 KZT, owned by u_7 — free text: name "Acme
    /// renewal\" worth 10.00 KZT", stage "lead"`
    ///
    /// A headline that names its payee writes the name quoted after the sentence and what
    /// stands below it in brackets: `Pay 1,250.00 EUR to "Acme Supplies Ltd" (vendor_77,
    /// account KZ•• •••• •••• 1234, for invoice inv_9182)`.
    pub fn plain(&self) -> String {
        let sentence = match &self.payee {
            Some(p) => format!("{} {} ({})", self.said, quote(&p.name), p.under),
            None => self.said.clone(),
        };
        if self.quoted.is_empty() {
            return sentence;
        }
        let pieces: Vec<String> = self
            .quoted
            .iter()
            .map(|q| format!("{} {}", q.member, quote(&q.text)))
            .collect();
        format!("{sentence}{FREE_TEXT_MARK}{}", pieces.join(", "))
    }
}

/// `text` between double quotes, so that it can end nowhere but at the closing quote and
/// stays on its line: a `"` inside is written `\"` and a backslash `\\` (as in JSON), a
/// character that looks like a double quote (`“`, `”`, `＂`: its Unicode TS #39 skeleton
/// is a double quote's) and every hidden or blank-looking character, line breaks included,
/// as its code point (`⟨U+201D⟩`).
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str(&code_point(c)),
            c if looks_like_a_double_quote(c) => out.push_str(&code_point(c)),
            c => out.push_str(&reveal(c.encode_utf8(&mut [0; 4]))),
        }
    }
    out.push('"');
    out
}

/// Whether `c`, not itself `"`, would be read as one: its confusable skeleton is the
/// double quote's (`''`).
fn looks_like_a_double_quote(c: char) -> bool {
    c != '"' && skeleton(c.encode_utf8(&mut [0; 4])).eq(skeleton("\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_headline_without_free_text_is_its_sentence() {
        let h = Headline::new("Pay 12,500.00 KZT to vendor_77 for invoice inv_9182");
        assert_eq!(
            h.plain(),
            "Pay 12,500.00 KZT to vendor_77 for invoice inv_9182"
        );
    }

    #[test]
    fn free_text_follows_the_sentence_under_its_member_quoted() {
        let h = Headline::new("Refund 25.00 USD of payment pay_01J")
            .quoting("reason", "duplicate charge");
        assert_eq!(
            h.plain(),
            "Refund 25.00 USD of payment pay_01J — free text: reason \"duplicate charge\""
        );
    }

    #[test]
    fn a_quote_inside_free_text_cannot_close_it() {
        let name = "Acme renewal\" worth 10.00 KZT at stage lead, owned by u_7. Also note: \"x";
        assert_eq!(
            quote(name),
            r#""Acme renewal\" worth 10.00 KZT at stage lead, owned by u_7. Also note: \"x""#
        );
        assert_eq!(
            quote(r#"a\"b"#),
            r#""a\\\"b""#,
            "a backslash cannot escape the escape"
        );
        for lookalike in ['\u{201C}', '\u{201D}', '\u{FF02}', '\u{2033}', '\u{02BA}'] {
            let q = quote(&format!("a{lookalike}b"));
            assert_eq!(q, format!("\"a⟨U+{:04X}⟩b\"", u32::from(lookalike)));
        }
        assert_eq!(quote("it's"), "\"it's\"", "a single quote closes nothing");
    }

    #[test]
    fn quoted_free_text_stays_on_its_line_and_hides_nothing() {
        assert_eq!(
            quote("renewal\n  amount    1.00 KZT"),
            "\"renewal⟨U+000A⟩  amount    1.00 KZT\""
        );
        assert_eq!(
            quote("10.00 KZT\u{2800}\u{2800}\u{202E}x"),
            "\"10.00 KZT⟨U+2800⟩⟨U+2800⟩⟨U+202E⟩x\""
        );
    }

    #[test]
    fn each_piece_is_said_once_in_order() {
        let h = Headline::new("Create a deal worth 9,900.00 EUR, owned by u_7")
            .quoting("name", "Acme")
            .quoting("stage", "proposal");
        assert_eq!(
            h.plain(),
            "Create a deal worth 9,900.00 EUR, owned by u_7 — free text: name \"Acme\", stage \"proposal\""
        );
        assert_eq!(h.quoted.len(), 2);
    }
}
