//! The identifier rule: what an id must be so that the id a person reads is the id that
//! is acted on. It applies to every identifier of an intent (tenant, provider, versions,
//! target, and the payload's ids of invoices, beneficiaries, payments, templates, owners)
//! and to the names of principals and the tenants they are granted.
//!
//! An identifier is 1 or more characters (the caller bounds the length) where
//!
//! 1. every character is visible ASCII (U+0021–U+007E), or, beyond ASCII, a character
//!    Unicode TS #39's General Security Profile allows in identifiers
//!    (Identifier_Status=Allowed). That refuses control characters (Cc), format
//!    characters (Cf: the bidirectional controls U+202A–202E and U+2066–2069, the marks
//!    U+200E/F, zero-width U+200B–200D, U+2060, U+FEFF, the soft hyphen …), whitespace
//!    (U+0020 included), every other default-ignorable character, symbols and emoji, and
//!    the letters of scripts not in common use;
//! 2. it is single-script in TS #39's sense: the resolved script set of its characters is
//!    not empty. Digits and `_ - . : @` belong to every script, so `заказ_17` and
//!    `注文-17` are single-script; Han with Hiragana or Katakana counts as Japanese and
//!    Han with Hangul as Korean. `vеndor_77` with a Cyrillic `е` is refused (Latin and
//!    Cyrillic);
//! 3. beyond ASCII, it is not a whole-script confusable of an ASCII id: an identifier
//!    with a non-ASCII character whose TS #39 confusable skeleton is all ASCII looks like
//!    that ASCII id and is refused (all-Cyrillic `ѕсоре` has the skeleton `scope`, Greek
//!    `ΑΒΕ_1` the skeleton `ABE_1`);
//! 4. it is not made of dots only (`.`, `..`, `...`). Ids become path segments of
//!    provider URLs (`PATCH /v1/deals/{target}`), where `.` and `..` are not a name but
//!    a step (RFC 3986 removes dot segments from a path): the deal `..` would be the
//!    update of `/v1/deals` itself. Longer runs of dots are refused with them, since no
//!    object is named so and some servers collapse them too.
//!
//! Pure-ASCII identifiers are checked by rules 1 and 4 alone: an ASCII id without controls,
//! spaces or a dots-only name is accepted as it always was. Legitimate ids in one other script pass: Greek
//! `λογαριασμός_7`, Japanese `請求書_2024`.
//!
//! The data (identifier status, scripts, confusable prototypes) is Unicode's, through the
//! `unicode-security` crate; nothing is tabulated here.

use std::fmt;

use unicode_security::{skeleton, GeneralSecurityProfile, MixedScript};

use crate::visible::code_point;

/// Why a string is not an identifier; the text a refusal carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentifierProblem {
    Empty,
    /// An invisible or directional character, whitespace or a control: shown as its code
    /// point, never as itself.
    Hidden(char),
    /// A character identifiers may not hold (a symbol, or a script not in common use).
    NotAllowed(char),
    /// Letters of more than one script.
    MixedScript,
    /// Looks like this ASCII id (its TS #39 skeleton).
    ConfusableWith(String),
    /// Only dots: `.` or `..` would be a step in a URL path, not a name.
    OnlyDots,
}

impl fmt::Display for IdentifierProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdentifierProblem::Empty => f.write_str("must not be empty"),
            IdentifierProblem::Hidden(c) => write!(
                f,
                "must not contain {}: no invisible, directional, whitespace or control characters in an identifier",
                code_point(*c)
            ),
            IdentifierProblem::NotAllowed(c) => write!(
                f,
                "must not contain {}: not an identifier character (Unicode TS #39)",
                code_point(*c)
            ),
            IdentifierProblem::MixedScript => {
                f.write_str("mixes letters of different scripts (Unicode TS #39)")
            }
            IdentifierProblem::ConfusableWith(ascii) => write!(
                f,
                "looks like the ASCII identifier {ascii:?} (Unicode TS #39 confusable)"
            ),
            IdentifierProblem::OnlyDots => f.write_str(
                "must not be made of dots only: `.` and `..` are steps in a path, not names",
            ),
        }
    }
}

/// Checks `id` against the identifier rule (see the module's documentation).
pub fn check_identifier(id: &str) -> Result<(), IdentifierProblem> {
    if id.is_empty() {
        return Err(IdentifierProblem::Empty);
    }
    for c in id.chars() {
        if crate::visible::is_hidden(c) {
            return Err(IdentifierProblem::Hidden(c));
        }
        if !c.is_ascii() && !c.identifier_allowed() {
            return Err(IdentifierProblem::NotAllowed(c));
        }
    }
    if id.chars().all(|c| c == '.') {
        return Err(IdentifierProblem::OnlyDots);
    }
    if id.is_ascii() {
        return Ok(());
    }
    if !id.is_single_script() {
        return Err(IdentifierProblem::MixedScript);
    }
    let skeleton: String = skeleton(id).collect();
    if skeleton.is_ascii() {
        return Err(IdentifierProblem::ConfusableWith(skeleton));
    }
    Ok(())
}

/// Whether `id` is an identifier.
pub fn is_identifier(id: &str) -> bool {
    check_identifier(id).is_ok()
}

#[cfg(test)]
mod tests;
