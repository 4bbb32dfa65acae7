//! The member schemas the actions' payload types describe themselves with (the types are
//! in `crate::actions`, one file per action). The same types are read by `parse_intent`
//! (unknown members refused) and describe themselves, limits included, as JSON Schema
//! (the MCP tools' input schemas), so what fleet reads and what it tells an agent it reads
//! cannot drift apart. The limits repeat shared/schemas/intent.v1.json; a test holds the
//! two in agreement.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};

use crate::currency::ISO_4217;
use crate::intent_limits::{
    MAX_APPROVAL_TTL_SECONDS, MAX_RATIONALE_CHARS, MAX_SAFE_INTEGER, MAX_TEXT_CHARS,
};

// The member schemas, as shared/schemas/intent.v1.json states them.

/// Short free text (a name, a reason): 1 to 256 characters, no control characters
/// (Unicode Cc).
pub fn text(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_TEXT_CHARS,
        "pattern": r"^[^\u0000-\u001f\u007f-\u009f]*$",
    })
}

/// An identifier (`crate::identifier`): 1 to 256 characters, none of them hidden, not
/// dots only. The pattern states what a pattern can: no character of the Basic
/// Multilingual Plane that `visible::is_hidden` names (controls, format characters,
/// whitespace, default-ignorables); `not` refuses `.`, `..` and longer runs of dots; the
/// validator refuses the rest of the rule too.
pub fn identifier(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_TEXT_CHARS,
        "pattern": identifier_pattern(),
        "not": {"pattern": ONLY_DOTS_PATTERN},
    })
}

/// An identifier made of dots only, which the identifier rule refuses.
pub const ONLY_DOTS_PATTERN: &str = r"^\.+$";

/// `^[^…]*$` over the Basic Multilingual Plane's hidden characters, as ranges in
/// `\uXXXX` escapes (ECMA-262 without the `u` flag, as JSON Schema validators read them,
/// cannot name characters beyond U+FFFF in a class).
pub fn identifier_pattern() -> String {
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for c in (0..=0xFFFF).filter_map(char::from_u32) {
        if !crate::visible::is_hidden(c) {
            continue;
        }
        let c = u32::from(c);
        match ranges.last_mut() {
            Some((_, end)) if *end + 1 == c => *end = c,
            _ => ranges.push((c, c)),
        }
    }
    let mut class = String::new();
    for (start, end) in ranges {
        class.push_str(&format!("\\u{start:04x}"));
        if end > start {
            class.push_str(&format!("-\\u{end:04x}"));
        }
    }
    format!("^[^{class}]*$")
}

pub fn amount_minor(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "integer", "minimum": 1, "maximum": MAX_SAFE_INTEGER})
}

pub fn currency(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"enum": ISO_4217.as_slice()})
}

pub fn version(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "integer", "minimum": 1, "maximum": MAX_SAFE_INTEGER})
}

/// `op_` + a ULID in upper-case Crockford base32.
pub fn operation_id(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "pattern": "^op_[0-7][0-9A-HJKMNP-TV-Z]{25}$"})
}

pub fn approval_ttl_seconds(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "integer", "minimum": 1, "maximum": MAX_APPROVAL_TTL_SECONDS})
}

/// Free text shown to the approver; line breaks allowed, U+0000 not.
pub fn rationale(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": ["string", "null"],
        "maxLength": MAX_RATIONALE_CHARS,
        "pattern": r"^[^\u0000]*$",
    })
}

const NO_NUL: &str = r"^[^\u0000]*$";

pub fn patch(generator: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "minProperties": 1,
        "propertyNames": {"pattern": NO_NUL},
        "additionalProperties": generator.subschema_for::<AnyWithoutNul>(),
    })
}

/// Any JSON value with no U+0000 in a string or a member name (Postgres cannot store it).
/// Recursive, so it is a definition of its own that refers to itself.
struct AnyWithoutNul;

impl JsonSchema for AnyWithoutNul {
    fn inline_schema() -> bool {
        false
    }

    fn schema_name() -> Cow<'static, str> {
        "any_without_nul".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let itself = generator.subschema_for::<AnyWithoutNul>();
        json_schema!({
            "anyOf": [
                {"type": ["null", "boolean", "number"]},
                {"type": "string", "pattern": NO_NUL},
                {"type": "array", "items": itself},
                {"type": "object", "propertyNames": {"pattern": NO_NUL}, "additionalProperties": itself},
            ]
        })
    }
}
