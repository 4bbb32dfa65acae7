use super::*;

fn refusal(text: &str) -> Option<(Ambiguity, String)> {
    match check_strict(text) {
        Ok(()) => None,
        Err(StrictJsonError::Ambiguous { kind, at }) => Some((kind, at)),
        Err(StrictJsonError::Malformed(m)) => panic!("{text:?} reported as malformed: {m}"),
    }
}

fn is_malformed(text: &str) -> bool {
    matches!(check_strict(text), Err(StrictJsonError::Malformed(_)))
}

#[test]
fn ordinary_json_passes() {
    for text in [
        "{}",
        "[]",
        " { \"a\" : [ 1 , -2.5e3 , true , false , null , \"x\" , { } , [ ] ] } ",
        r#"{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}"#,
        r#""\" \\ \/ \b \f \n \r \t \u00e9 \ud834\udd1e""#,
        "\"caf\u{e9} \u{1d11e}\"",
        "0",
        "-0",
        "9007199254740991",
        "-9007199254740991",
        "0.35",
        "1e21",
        "1E+21",
        "5e-324",
        "1.7976931348623157e308",
        "0.0e-999",
        "-0.0",
    ] {
        assert_eq!(check_strict(text), Ok(()), "{text}");
    }
}

#[test]
fn a_member_name_twice_in_one_object_is_refused_with_its_path() {
    assert_eq!(
        refusal(r#"{"a":1,"a":2}"#),
        Some((Ambiguity::DuplicateMember, "a".into()))
    );
    assert_eq!(
        refusal(r#"{"p":{"x":[{"k":1,"k":1}]}}"#),
        Some((Ambiguity::DuplicateMember, "p.x[0].k".into()))
    );
    // The same name written two ways is still the same name.
    assert_eq!(
        refusal(r#"{"ab":1,"a\u0062":2}"#),
        Some((Ambiguity::DuplicateMember, "ab".into()))
    );
    // The same name in sibling or nested objects is not a duplicate.
    assert_eq!(
        refusal(r#"{"a":{"a":1},"b":{"a":2},"c":[{"a":1},{"a":1}]}"#),
        None
    );
}

#[test]
fn lone_surrogates_are_refused() {
    for text in [
        r#""\ud800""#,
        r#""\udc00""#,
        r#""\ud800x""#,
        r#""\ud800\u0041""#,
        r#"{"\udfff":1}"#,
        r#"["ok","\uDBFF"]"#,
    ] {
        assert_eq!(
            refusal(text).map(|r| r.0),
            Some(Ambiguity::InvalidUnicode),
            "{text}"
        );
    }
    assert_eq!(
        refusal(r#"{"a":["x","\ud800"]}"#),
        Some((Ambiguity::InvalidUnicode, "a[1]".into()))
    );
}

#[test]
fn nul_is_refused_escaped_or_raw_in_values_and_names() {
    for text in [
        r#""\u0000""#,
        "\"a\u{0}b\"",
        r#"{"a\u0000":1}"#,
        r#"{"r":"x\u0000"}"#,
    ] {
        assert_eq!(
            refusal(text).map(|r| r.0),
            Some(Ambiguity::NulCharacter),
            "{text}"
        );
    }
    // Other escaped control characters are JSON and stay allowed here.
    assert_eq!(refusal(r#""\u0001\u001f""#), None);
}

#[test]
fn numbers_beyond_what_a_double_holds_are_refused() {
    for text in [
        "9007199254740992",
        "-9007199254740992",
        "9007199254740993",
        "18446744073709551616",
        "100000000000000000000000",
        "1e400",
        "-1e400",
        "1.8e308",
        "1e-400",
        "0.1e-330",
    ] {
        assert_eq!(
            refusal(text).map(|r| r.0),
            Some(Ambiguity::NumberOutOfRange),
            "{text}"
        );
    }
    assert_eq!(
        refusal(r#"{"p":{"score":1e999}}"#),
        Some((Ambiguity::NumberOutOfRange, "p.score".into()))
    );
    // Large or tiny values written as floats are doubles every parser agrees on.
    for text in [
        "9007199254740992.0",
        "1e21",
        "123456789012345678901234567890e0",
        "4.9e-324",
    ] {
        assert_eq!(refusal(text), None, "{text}");
    }
}

#[test]
fn broken_grammar_is_malformed() {
    for text in [
        "",
        " ",
        "{",
        "}",
        "[1,]",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{1:1}",
        "[1 2]",
        "01",
        "1.",
        ".5",
        "-",
        "1e",
        "+1",
        "tru",
        "nul",
        "\"open",
        "\"bad \\x escape\"",
        "\"\\u12\"",
        "\"\\u12g4\"",
        "\"tab\there\"",
        "{} {}",
        "[]]",
        "NaN",
        "Infinity",
    ] {
        assert!(is_malformed(text), "{text:?} should be malformed");
    }
}

#[test]
fn deep_nesting_does_not_recurse() {
    let depth = 100_000;
    let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    assert_eq!(check_strict(&text), Ok(()));
    let objects = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
    assert_eq!(check_strict(&objects), Ok(()));
}

#[test]
fn codes_are_stable() {
    let codes: Vec<_> = [
        Ambiguity::DuplicateMember,
        Ambiguity::InvalidUnicode,
        Ambiguity::NumberOutOfRange,
        Ambiguity::NulCharacter,
    ]
    .iter()
    .map(|a| a.code())
    .collect();
    assert_eq!(
        codes,
        [
            "duplicate_member",
            "invalid_unicode",
            "number_out_of_range",
            "nul_character"
        ]
    );
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Never looser than serde_json's grammar: whatever the strict reader accepts,
        /// serde_json parses (shallow texts: serde_json also caps nesting at 128).
        #[test]
        fn accepted_text_is_json_to_serde(text in r#"[\[\]{}",:0-9.eE+\- a-c\\u]{0,24}"#) {
            if check_strict(&text).is_ok() {
                prop_assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok(), "{text:?}");
            }
        }

        /// Never stricter than needed on what serde_json itself writes: serialised values
        /// with distinct names and in-range numbers pass.
        #[test]
        fn serialised_values_pass(v in value()) {
            let text = serde_json::to_string(&v).unwrap();
            prop_assert_eq!(check_strict(&text), Ok(()), "{}", text);
        }
    }

    fn value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::Bool),
            (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).prop_map(|i| serde_json::json!(i)),
            any::<f64>()
                .prop_filter("finite, not underflowing", |f| f.is_finite())
                .prop_map(|f| serde_json::json!(f)),
            "[^\u{0}]{0,8}".prop_map(serde_json::Value::String),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
                prop::collection::btree_map("[^\u{0}]{0,4}", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }
}
