use unicode_security::{skeleton, GeneralSecurityProfile};

use super::*;

#[test]
fn ascii_ids_without_spaces_or_controls_pass_as_before() {
    for id in [
        "vendor_77",
        "inv_9182",
        "org_482",
        "payments-v3",
        "inv_9182@7",
        "deal:8841",
        "a",
        "~!#$%&*+/=?^`{|}",
    ] {
        assert_eq!(check_identifier(id), Ok(()), "{id}");
    }
}

#[test]
fn format_control_whitespace_and_default_ignorable_characters_are_refused() {
    for c in [
        '\u{202E}',
        '\u{202A}',
        '\u{202B}',
        '\u{202C}',
        '\u{202D}',
        '\u{2066}',
        '\u{2067}',
        '\u{2068}',
        '\u{2069}',
        '\u{200E}',
        '\u{200F}',
        '\u{061C}',
        '\u{200B}',
        '\u{200C}',
        '\u{200D}',
        '\u{2060}',
        '\u{FEFF}',
        '\u{00AD}',
        '\u{034F}',
        '\u{FE0F}',
        '\u{3164}',
        '\u{E0041}',
        ' ',
        '\u{00A0}',
        '\u{3000}',
        '\t',
        '\n',
        '\u{07}',
        '\u{85}',
        '\u{2028}',
    ] {
        let id = format!("vendor_{c}77");
        assert_eq!(
            check_identifier(&id),
            Err(IdentifierProblem::Hidden(c)),
            "{c:?}"
        );
        assert!(
            check_identifier(&id)
                .unwrap_err()
                .to_string()
                .contains(&format!("U+{:04X}", u32::from(c))),
            "the refusal names {c:?} by its code point"
        );
    }
}

#[test]
fn the_reversed_id_of_a_right_to_left_override_is_refused() {
    // Shown as "vendor_77" by a bidi-aware renderer, but it is another id.
    assert_eq!(
        check_identifier("\u{202E}77_rodnev\u{202C}"),
        Err(IdentifierProblem::Hidden('\u{202E}'))
    );
}

#[test]
fn symbols_and_uncommon_scripts_are_not_identifier_characters() {
    for c in ['€', '①', '😀', '\u{E000}', 'ᚠ'] {
        assert_eq!(
            check_identifier(&format!("x{c}")),
            Err(IdentifierProblem::NotAllowed(c)),
            "{c:?}"
        );
    }
}

#[test]
fn a_cyrillic_look_alike_letter_in_a_latin_id_is_mixed_script() {
    assert_eq!(
        check_identifier("v\u{0435}ndor_77"),
        Err(IdentifierProblem::MixedScript)
    );
}

#[test]
fn a_whole_script_confusable_of_an_ascii_id_is_refused() {
    assert_eq!(
        check_identifier("ѕсоре"),
        Err(IdentifierProblem::ConfusableWith("scope".into()))
    );
    assert!(matches!(
        check_identifier("ΑΒΕ_1"),
        Err(IdentifierProblem::ConfusableWith(_))
    ));
    // Latin, but not ASCII: dotless i looks like i.
    assert!(matches!(
        check_identifier("ınv_1"),
        Err(IdentifierProblem::ConfusableWith(_))
    ));
}

#[test]
fn legitimate_ids_in_one_other_script_pass() {
    for id in [
        "λογαριασμός_7",
        "請求書_2024",
        "ベンダー_77",
        "заказ_17",
        "고객-42",
        "café_12",
        "فاتورة_9",
    ] {
        assert_eq!(check_identifier(id), Ok(()), "{id}");
    }
}

/// Letters of other scripts that Unicode's confusables data (the crate's, through
/// `skeleton`) maps to one ASCII lower-case letter, with that letter.
fn confusables_of_ascii_letters() -> Vec<(char, char)> {
    let blocks = [
        0x0370..0x0400, // Greek
        0x0400..0x0530, // Cyrillic
        0x0530..0x0590, // Armenian
        0x10A0..0x1100, // Georgian
        0x13A0..0x1400, // Cherokee
    ];
    let mut out = Vec::new();
    for c in blocks.into_iter().flatten().filter_map(char::from_u32) {
        if !c.identifier_allowed() {
            continue;
        }
        let s: String = skeleton(&c.to_string()).collect();
        let mut chars = s.chars();
        if let (Some(l), None) = (chars.next(), chars.next()) {
            if l.is_ascii_lowercase() {
                out.push((c, l));
            }
        }
    }
    out
}

#[test]
fn substituting_a_confusable_letter_of_another_script_into_a_latin_id_is_refused() {
    let confusables = confusables_of_ascii_letters();
    // The data has look-alikes of many letters in several scripts.
    assert!(confusables.len() >= 20, "{confusables:?}");
    let letters: std::collections::BTreeSet<char> = confusables.iter().map(|(_, l)| *l).collect();
    assert!(letters.len() >= 10, "{letters:?}");
    let ids = [
        "vendor_77",
        "inv_9182",
        "org_482",
        "pay_01jq8r",
        "template_nda_v2",
        "owner-alice",
        "deal-8841",
        "cust_1042",
        "ref_xyz_qwerty",
        "beneficiary_hk",
    ];
    let mut tried = 0;
    for id in ids {
        assert_eq!(check_identifier(id), Ok(()), "{id}");
        for (i, original) in id.char_indices() {
            for &(look_alike, letter) in &confusables {
                if letter != original {
                    continue;
                }
                let spoofed = format!("{}{look_alike}{}", &id[..i], &id[i + 1..]);
                assert!(
                    check_identifier(&spoofed).is_err(),
                    "{spoofed:?} ({look_alike:?} for {letter:?} in {id}) is accepted"
                );
                tried += 1;
            }
        }
    }
    assert!(tried >= 100, "{tried} substitutions");
}

#[test]
fn ids_made_of_dots_only_are_refused() {
    for id in [".", "..", "...", "...."] {
        assert_eq!(
            check_identifier(id),
            Err(IdentifierProblem::OnlyDots),
            "{id}"
        );
        assert!(check_identifier(id)
            .unwrap_err()
            .to_string()
            .contains("dots only"));
    }
}

#[test]
fn ids_with_dots_and_something_else_pass() {
    for id in ["inv.2024.7", ".hidden", "v1..2", "deal.", "..x"] {
        assert_eq!(check_identifier(id), Ok(()), "{id}");
    }
}
