//! Free text as a person is shown it: every character that draws nothing, or that
//! changes how the text around it is drawn, is replaced by its code point, so what an
//! agent wrote cannot look like something else (a right-to-left override turning
//! `vendor_77` into another id on screen, a zero-width space splitting a word unseen).
//!
//! One rule, used wherever free text reaches a person (console, `fleetctl`, event
//! lines) and, through [`is_hidden`], by the identifier rule and by intent.v1's schema
//! pattern.

use unicode_general_category::{get_general_category, GeneralCategory};
use unicode_security::GeneralSecurityProfile;

/// Whether `c` draws nothing or rearranges the text around it: a control character
/// (Cc, line breaks included), a format character (Cf: bidirectional controls U+202A–202E
/// and U+2066–2069, marks U+200E/F and U+061C, zero-width U+200B–200D, word joiner U+2060,
/// U+FEFF, soft hyphen, tags …), whitespace (Unicode White_Space, U+0020 included, and the
/// line and paragraph separators), or a default-ignorable code point (variation
/// selectors, Hangul fillers, combining grapheme joiner …). The categories come from
/// `unicode-general-category`, the default-ignorables from TS #39's identifier types
/// (`unicode-security`): no table is written here. What [`reveal`] writes as a code point
/// is this and the blank-looking letters and symbols ([`looks_blank`]).
pub fn is_hidden(c: char) -> bool {
    use GeneralCategory::{Control, Format, LineSeparator, ParagraphSeparator, SpaceSeparator};
    matches!(
        get_general_category(c),
        Control | Format | SpaceSeparator | LineSeparator | ParagraphSeparator
    ) || c.is_whitespace()
        || c.identifier_type()
            == Some(unicode_security::general_security_profile::IdentifierType::Default_Ignorable)
}

/// Whether `c` is a letter or symbol by its category that is nevertheless drawn as an
/// empty cell ([`BLANK_LOOKING`]). Identifiers refuse these already (none is
/// Identifier_Status=Allowed); free text may carry them, so [`reveal`] shows them.
pub fn looks_blank(c: char) -> bool {
    BLANK_LOOKING.contains(&c)
}

/// Whether [`reveal`] writes `c` as its code point.
fn revealed_as_code_point(c: char) -> bool {
    c != ' ' && c != '\n' && (is_hidden(c) || looks_blank(c))
}

/// Characters that are letters or symbols by their category, yet draw an empty cell: a
/// run of them pads text out of view as spaces would ("worth 10.00 KZT⠀⠀⠀…" hiding what
/// follows), while neither Unicode's White_Space nor its default-ignorables name them all.
/// The Hangul fillers are default-ignorable already; they are listed so that the rule
/// does not depend on that classification staying where it is.
pub const BLANK_LOOKING: [char; 7] = [
    '\u{2800}',  // BRAILLE PATTERN BLANK (So)
    '\u{115F}',  // HANGUL CHOSEONG FILLER (Lo)
    '\u{1160}',  // HANGUL JUNGSEONG FILLER (Lo)
    '\u{3164}',  // HANGUL FILLER (Lo)
    '\u{FFA0}',  // HALFWIDTH HANGUL FILLER (Lo)
    '\u{1D159}', // MUSICAL SYMBOL NULL NOTEHEAD (So)
    '\u{16FE4}', // KHITAN SMALL SCRIPT FILLER (Mn)
];

/// `c` as [`reveal`] writes it: `⟨U+202E⟩`, upper-case hex, at least four digits.
pub fn code_point(c: char) -> String {
    format!("⟨U+{:04X}⟩", u32::from(c))
}

/// `text` with every hidden ([`is_hidden`]) or blank-looking ([`looks_blank`]) character written as its code point
/// (`⟨U+202E⟩`), except the plain space and the line feed, which a person sees for what
/// they are. Pure and idempotent: what it returns has nothing left to reveal.
pub fn reveal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if revealed_as_code_point(c) {
            out.push_str(&code_point(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether [`reveal`] would change `text`.
pub fn has_hidden(text: &str) -> bool {
    text.chars().any(revealed_as_code_point)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directional_and_zero_width_characters_are_written_as_code_points() {
        assert_eq!(
            reveal("Pay vendor_\u{202E}77\u{202C} now"),
            "Pay vendor_⟨U+202E⟩77⟨U+202C⟩ now"
        );
        for c in [
            '\u{200B}',
            '\u{200C}',
            '\u{200D}',
            '\u{200E}',
            '\u{200F}',
            '\u{202A}',
            '\u{202B}',
            '\u{202D}',
            '\u{2066}',
            '\u{2067}',
            '\u{2068}',
            '\u{2069}',
            '\u{2060}',
            '\u{FEFF}',
            '\u{00AD}',
            '\u{061C}',
            '\u{180E}',
            '\u{034F}',
            '\u{FE0F}',
            '\u{3164}',
            '\u{E0041}',
            '\u{2028}',
            '\u{2029}',
            '\u{00A0}',
            '\u{3000}',
            '\t',
            '\r',
            '\u{7F}',
            '\u{85}',
        ] {
            let shown = reveal(&format!("a{c}b"));
            assert_eq!(shown, format!("a⟨U+{:04X}⟩b", u32::from(c)), "{c:?}");
        }
        assert_eq!(reveal("\u{E0041}"), "⟨U+E0041⟩");
    }

    /// Each blank-looking character, one test line each, so a failure names it.
    fn revealed(c: char) {
        assert!(has_hidden(&c.to_string()), "{c:?} is revealed");
        assert_eq!(
            reveal(&format!("10.00 KZT{c}{c}tail")),
            format!("10.00 KZT⟨U+{0:04X}⟩⟨U+{0:04X}⟩tail", u32::from(c)),
            "{c:?}"
        );
    }

    #[test]
    fn the_blank_braille_pattern_is_revealed() {
        revealed('\u{2800}');
    }

    #[test]
    fn the_hangul_fillers_are_revealed() {
        revealed('\u{115F}');
        revealed('\u{1160}');
        revealed('\u{3164}');
        revealed('\u{FFA0}');
    }

    #[test]
    fn the_other_empty_glyphs_are_revealed() {
        revealed('\u{1D159}');
        revealed('\u{16FE4}');
    }

    #[test]
    fn every_space_but_the_plain_one_is_revealed() {
        for c in ('\u{2000}'..='\u{200A}').chain([
            '\u{00A0}', '\u{1680}', '\u{202F}', '\u{205F}', '\u{3000}', '\u{180E}',
        ]) {
            revealed(c);
        }
        assert_eq!(reveal("a b"), "a b");
    }

    #[test]
    fn invisible_operators_and_musical_formatting_are_revealed() {
        for c in [
            '\u{2061}',
            '\u{2062}',
            '\u{2063}',
            '\u{2064}',
            '\u{1D173}',
            '\u{1D17A}',
            '\u{1BCA0}',
            '\u{17B4}',
            '\u{17B5}',
        ] {
            revealed(c);
        }
    }

    #[test]
    fn no_blank_looking_character_is_an_identifier() {
        for c in BLANK_LOOKING {
            assert!(
                crate::identifier::check_identifier(&format!("vendor{c}77")).is_err(),
                "{c:?}"
            );
        }
    }

    #[test]
    fn visible_symbols_and_braille_dots_stay_as_they_are() {
        for text in ["⠁⠃⠉ braille", "␣ open box", "♩ note", "ㄱ hangul letter"] {
            assert_eq!(reveal(text), text);
        }
    }

    #[test]
    fn ordinary_text_is_left_as_it_is() {
        for text in [
            "Invoice is due today and matches PO 5531.",
            "two lines\nof rationale",
            "Ελληνικά, 日本語のテキスト, עברית, العربية, café",
            "",
        ] {
            assert_eq!(reveal(text), text);
            assert!(!has_hidden(text));
        }
    }

    #[test]
    fn revealing_twice_changes_nothing_more() {
        let once = reveal("x\u{202E}y\u{200B}z");
        assert_eq!(reveal(&once), once);
        assert!(!has_hidden(&once));
    }
}
