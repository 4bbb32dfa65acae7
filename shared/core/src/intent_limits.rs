//! intent.v1's limits. shared/schemas/intent.v1.json states the same; a test keeps the
//! two in agreement.

pub use crate::strict_json::MAX_SAFE_INTEGER;

/// Messages larger than this are refused before parsing.
pub const MAX_INTENT_BYTES: usize = 64 * 1024;
pub const MAX_APPROVAL_TTL_SECONDS: i64 = 30 * 24 * 3600;
/// Identifier-like text (ids, versions, names), in characters (Unicode scalar values,
/// what JSON Schema's `maxLength` counts), not bytes.
pub const MAX_TEXT_CHARS: usize = 256;
/// The free-text rationale shown to the approver, in characters.
pub const MAX_RATIONALE_CHARS: usize = 4096;
