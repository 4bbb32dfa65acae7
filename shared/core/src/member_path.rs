//! Which member of a JSON document a typed reading refused, as a dotted path
//! (`payload.amount_minor`, `patch.items[2]`), so that a refusal names the member an agent
//! must fix rather than the object around it. The path is made of the names the document
//! used; a name that is not a plain identifier is cut off (its parent is named instead),
//! so a path never carries arbitrary text a sender chose.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// The longest member name a path repeats; a longer one is not named.
const MAX_NAME_CHARS: usize = 64;

/// A typed reading that failed: where, and serde's description (which may quote the value:
/// it is for logs of the refusal's kind, never for an answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The member's path below the document read (`None`: the document itself).
    pub path: Option<String>,
    pub problem: String,
}

impl Refused {
    /// The path below `base` (`payload` → `payload.amount_minor`); `base` alone when the
    /// document itself was refused. An empty `base` names the path alone.
    pub fn under(&self, base: &str) -> String {
        match (&self.path, base.is_empty()) {
            (None, _) => base.to_owned(),
            (Some(p), true) => p.clone(),
            (Some(p), false) => format!("{base}.{p}"),
        }
    }
}

/// Reads `value` as a `T`, naming the refused member when it fails.
pub fn read<T: DeserializeOwned>(value: &Value) -> Result<T, Refused> {
    serde_path_to_error::deserialize(value).map_err(located)
}

/// Reads JSON text as a `T`. `Err(None)` when the text is no JSON at all.
pub fn read_text<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Option<Refused>> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let read: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        if e.inner().is_data() {
            Some(located(e))
        } else {
            None
        }
    })?;
    de.end().map_err(|_| None)?;
    Ok(read)
}

fn located<E: std::fmt::Display>(e: serde_path_to_error::Error<E>) -> Refused {
    let problem = e.inner().to_string();
    let mut segments: Vec<String> = Vec::new();
    for segment in e.path().iter() {
        match segment {
            serde_path_to_error::Segment::Seq { index } => match segments.last_mut() {
                Some(last) => last.push_str(&format!("[{index}]")),
                None => segments.push(format!("[{index}]")),
            },
            serde_path_to_error::Segment::Map { key }
            | serde_path_to_error::Segment::Enum { variant: key } => {
                if !plain_name(key) {
                    break;
                }
                segments.push(key.clone());
            }
            serde_path_to_error::Segment::Unknown => break,
        }
    }
    // serde reports a missing member at the object that lacks it; the member's name is
    // the type's own (never the sender's), quoted in serde's fixed wording.
    if let Some(name) = missing_member(&problem) {
        segments.push(name.to_owned());
    }
    Refused {
        path: (!segments.is_empty()).then(|| segments.join(".")),
        problem,
    }
}

fn missing_member(problem: &str) -> Option<&str> {
    let name = problem.strip_prefix("missing field `")?.split('`').next()?;
    plain_name(name).then_some(name)
}

/// A name a path may repeat: 1 to 64 ASCII letters, digits, `_` and `-`.
pub fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Payment {
        amount_minor: i64,
        currency: String,
        lines: Option<Vec<Line>>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Line {
        sku: String,
    }

    fn path(v: Value) -> Option<String> {
        read::<Payment>(&v).unwrap_err().path
    }

    #[test]
    fn a_member_of_the_wrong_type_is_named() {
        assert_eq!(
            path(json!({"amount_minor": "12500", "currency": "KZT"})).as_deref(),
            Some("amount_minor")
        );
        assert_eq!(
            path(json!({"amount_minor": 12500.5, "currency": "KZT"})).as_deref(),
            Some("amount_minor")
        );
    }

    #[test]
    fn a_missing_member_is_named_by_the_types_own_name() {
        assert_eq!(
            path(json!({"currency": "KZT"})).as_deref(),
            Some("amount_minor")
        );
    }

    #[test]
    fn an_unknown_member_is_named_when_its_name_is_plain_and_its_parent_otherwise() {
        assert_eq!(
            path(json!({"amount_minor": 1, "currency": "KZT", "memo": "x"})).as_deref(),
            Some("memo")
        );
        let odd =
            json!({"amount_minor": 1, "currency": "KZT", "lines": [{"sku": "a", "a b\n": 1}]});
        assert_eq!(path(odd).as_deref(), Some("lines[0]"));
        let long = "x".repeat(MAX_NAME_CHARS + 1);
        let mut v = json!({"amount_minor": 1, "currency": "KZT"});
        v[long.as_str()] = json!(1);
        assert_eq!(path(v), None);
    }

    #[test]
    fn elements_of_arrays_are_indexed() {
        let v = json!({"amount_minor": 1, "currency": "KZT", "lines": [{"sku": "a"}, {"sku": 2}]});
        assert_eq!(path(v).as_deref(), Some("lines[1].sku"));
    }

    #[test]
    fn a_path_is_put_under_its_base() {
        let r = read::<Payment>(&json!({"currency": "KZT"})).unwrap_err();
        assert_eq!(r.under("payload"), "payload.amount_minor");
        assert_eq!(r.under(""), "amount_minor");
        let whole = read::<Payment>(&json!([1])).unwrap_err();
        assert_eq!(whole.under("payload"), "payload");
    }

    #[test]
    fn text_that_is_no_json_has_no_path() {
        assert_eq!(
            read_text::<Payment>(b"{\"amount_minor\": ").unwrap_err(),
            None
        );
        assert_eq!(
            read_text::<serde_json::Map<String, Value>>(b"{} x").unwrap_err(),
            None
        );
        let r = read_text::<Payment>(b"{\"currency\": 1}")
            .unwrap_err()
            .unwrap();
        assert_eq!(r.path.as_deref(), Some("currency"));
    }
}
