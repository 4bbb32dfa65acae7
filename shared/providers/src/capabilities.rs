//! What a provider's contract guarantees, as the reconcile and execute logic needs to
//! know it: whether a create can be safely repeated under one key, whether the effect can
//! be looked up, and whether updates can be made conditional on a version.

/// A provider's guarantees (docs/design.md#provider-contracts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The provider deduplicates creates by `Idempotency-Key` (within its retention window).
    pub idempotent_create: bool,
    /// The effect can be found again by our reference (search) or by its id.
    pub lookup: bool,
    /// Updates can carry `If-Match` and fail on a version conflict.
    pub conditional_update: bool,
}
