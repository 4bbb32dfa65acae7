//! The one list of the codes an error answer of the API may carry, each with its title and
//! detail: problems are written from it ([`crate::problem`]), the OpenAPI document's
//! `ErrorCode` enum is made from it ([`crate::contract_enums`]), and tests hold it equal
//! to every code the fleet's rules produce and to the sections of docs/api.md.

/// One code of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    pub code: &'static str,
    pub title: &'static str,
    pub detail: &'static str,
}

const fn kind(code: &'static str, title: &'static str, detail: &'static str) -> Kind {
    Kind {
        code,
        title,
        detail,
    }
}

/// Every code the API (and its MCP door) answers a refusal with.
pub const CATALOGUE: &[Kind] = &[
    // Who is asking.
    kind("unauthorized", "Unauthorized", "The request carries no valid bearer token: it is missing, malformed, unknown or revoked."),
    kind("token_expired", "Token expired", "The bearer token is past its expiry; ask for a new token."),
    kind("role_not_allowed", "Role not allowed", "The caller's role may not do this."),
    kind("tenant_not_granted", "Tenant not granted", "The caller's principal was not granted the intent's tenant; nothing was written."),
    kind("submitter_cannot_approve", "Submitter cannot approve", "The principal that submitted the operation never approves it."),
    kind("not_recorded_approver", "Not a recorded approver", "The deployment's records do not make the principal a live approver of the operation's tenant, so its approval would not count."),
    kind("supersedes_forbidden", "Superseding forbidden", "Only the principal that submitted an operation may replace it; nothing was written."),
    // What is addressed, and how.
    kind("not_found", "Not found", "No such operation among the caller's tenants, or no such route."),
    kind("method_not_allowed", "Method not allowed", "The route does not take this method; the Allow header lists those it takes."),
    kind("unsupported_media_type", "Unsupported media type", "The body must be sent as JSON, with Content-Type: application/json."),
    kind("invalid_query", "Invalid query", "A query parameter is unknown or out of range; field names it."),
    kind("cursor_invalid", "Cursor of another listing", "The cursor was handed out for a listing of other tenants; start again from the first page."),
    kind("oversized", "Body too large", "The body is larger than 64 KiB."),
    kind("body_timeout", "Body too slow", "The body did not arrive in time (by default within 10 seconds, and after 2 seconds at no less than 1 KiB a second); the connection is closed."),
    kind("operation_id_conflict", "Operation id conflict", "The operation id names another snapshot of the same tenant; the stored operation is untouched."),
    kind("dead_letter_resolved", "Dead letter resolved", "The dead letter was replayed or discarded already; nothing was recorded."),
    kind("replay_not_supported", "Replay not supported", "The dead letter's queue is not replayed from here (webhooks come again from their provider), or its doorbell is not one."),
    kind("operation_id_ambiguous", "Operation id ambiguous", "Two of the caller's tenants hold an operation with this id; name one with the tenant query parameter."),
    // Decisions the operation's state does not allow.
    kind("hash_mismatch", "Hash mismatch", "The payload hash is not the stored snapshot's; nothing was recorded."),
    kind("approval_expired", "Approval expired", "The approval window closed; nothing was recorded."),
    kind("not_pending", "Not pending", "The operation no longer waits for this approval; nothing was recorded."),
    kind("already_started", "Already started", "Execution began or the operation ended; it can no longer be rejected."),
    kind("not_allowed_in_status", "Not allowed in this status", "The operation's status does not allow this decision; nothing was written."),
    kind("changed_meanwhile", "Changed meanwhile", "The operation changed while the decision was made; read it again and decide anew."),
    kind("signature_required", "Signature required", "The operation's policy asks for signed approvals and none was given; nothing was recorded."),
    kind("signature_invalid", "Signature invalid", "The approval's signature does not count; field names the member at fault. Nothing was recorded."),
    // The body breaks the contract (for an intent: the reason the queue dead-letters it with).
    kind("malformed", "Malformed body", "The body is not the JSON object this route takes."),
    kind("invalid_field", "Invalid field", "A member is missing, unknown, of the wrong type or out of its limits; field names it."),
    kind("duplicate_member", "Duplicate member", "A member name appears twice in one object."),
    kind("invalid_unicode", "Invalid Unicode", "A string holds an escaped UTF-16 surrogate without its pair."),
    kind("number_out_of_range", "Number out of range", "A number is beyond what every JSON parser reads alike."),
    kind("nul_character", "NUL character", "A string or member name holds U+0000."),
    kind("unsupported_schema", "Unsupported schema", "The schema member names a version this fleet does not read."),
    kind("unknown_action", "Unknown action", "The action is not one of the catalogue's."),
    kind("unsupported_provider", "Unsupported provider", "The provider does not serve this action."),
    kind("provider_cannot_execute_safely", "Provider cannot execute safely", "The provider offers neither idempotent creates nor a lookup by reference, so an uncertain create could never be settled."),
    kind("provider_cannot_update_conditionally", "Provider cannot update conditionally", "The provider is not declared to support conditional updates."),
    kind("approval_outlives_key", "Approval outlives the provider's key", "The approval window is not shorter than the provider keeps idempotency keys."),
    kind("unknown_policy", "Unknown policy", "No quorum policy covers the intent's policy version and action."),
    kind("policy_not_in_force", "Policy not in force", "The intent names a policy version other than the one the deployment put in force for its tenant and action."),
    kind("currency_not_banded", "Currency not banded", "The policy in force bands amounts by currency and has no band for this currency."),
    kind("payee_unknown", "Payee unknown", "The provider's directory cannot confirm the payee, and the policy refuses unknown payees."),
    kind("payee_name_unconfirmed", "Payee name unconfirmed", "The provider's directory did not confirm the name the intent gives as the account holder's (or the intent gives none), and the policy in force refuses that result."),
    kind("payee_directory_unreachable", "Payee directory unreachable", "The queue's refusal of an intent whose payee's directory gave no answer until the deadline; the API answers payee_directory_unavailable (503) instead."),
    kind("object_of_other_tenant", "Object of another tenant", "The intent names an object the fleet made or changed for another tenant."),
    kind("object_unknown", "Object unknown", "The intent names an object the fleet has no record of, and the policy refuses such objects."),
    kind("customer_unknown", "Customer unknown", "A charge names a customer the payments provider does not have."),
    kind("payment_method_unknown", "Payment method unknown", "A charge names a payment method the payments provider does not have."),
    kind("payment_method_not_customers", "Payment method of another customer", "A charge names a payment method that is not attached to its customer."),
    kind("payment_unknown", "Payment unknown", "A refund names a payment the payments provider does not have."),
    kind("refund_exceeds_payment", "Refund exceeds the payment", "A refund asks for more than is left to refund of its payment."),
    kind("supersedes_unknown_operation", "Superseded operation unknown", "The operation named in supersedes does not exist for this tenant."),
    kind("supersedes_other_tenant_or_action", "Superseded operation of another action", "The operation named in supersedes is of another action."),
    kind("supersedes_executed", "Superseded operation executed", "The operation named in supersedes was claimed for execution or may have had an effect."),
    kind("database_refused", "Database refused", "Postgres cannot store the intent's values."),
    kind("invalid_arguments", "Invalid arguments", "A tool's arguments are of the wrong shape or out of range; field names the argument when it is known."),
    // Come back later.
    kind("too_many_waiters", "Too many waiters", "The caller's share of the wait slots is taken; retry after Retry-After."),
    kind("rate_limited", "Rate limited", "The caller's principal sent more requests than its rate allows; retry after Retry-After."),
    kind("busy", "Busy", "Every request slot stayed taken; nothing was done. Retry after Retry-After."),
    kind("unavailable", "Unavailable", "Postgres did not answer; nothing was decided. Retry after Retry-After."),
    kind("evidence_key_not_configured", "Evidence key not configured", "The deployment has no evidence key (the setting EVIDENCE_KEY_FILE), so no evidence bundle is signed; its operator sets one and restarts the API."),
    kind("payee_directory_unavailable", "Payee directory unavailable", "The provider's directory gave no answer about the payee (rate-limited, failing or out of reach); nothing was stored. Send the same intent again after Retry-After."),
];

/// The catalogue's entry for `code` (a code outside it reads as a generic refusal; a test
/// keeps every code the API sends inside it).
pub fn kind_of(code: &str) -> Kind {
    CATALOGUE
        .iter()
        .copied()
        .find(|k| k.code == code)
        .unwrap_or(Kind {
            code: "refused",
            title: "Refused",
            detail: "The request was refused.",
        })
}

/// Every code, in the catalogue's order.
pub fn codes() -> Vec<&'static str> {
    CATALOGUE.iter().map(|k| k.code).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_code_is_listed_once_with_a_title_and_a_detail() {
        let mut seen = BTreeSet::new();
        for k in CATALOGUE {
            assert!(seen.insert(k.code), "{} twice", k.code);
            assert!(!k.title.is_empty() && !k.detail.is_empty(), "{}", k.code);
            assert!(
                k.code.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{}",
                k.code
            );
        }
    }

    #[test]
    fn every_code_has_its_section_in_the_api_documentation() {
        let doc = include_str!("../../../docs/api.md");
        for k in CATALOGUE {
            let heading = format!("\n### Error `{}`\n", k.code);
            assert!(
                doc.contains(&heading),
                "docs/api.md has no section {heading:?}"
            );
        }
    }

    #[test]
    fn every_code_the_api_answers_with_is_in_the_catalogue() {
        use crate::decisions::DecisionError;
        use crate::error::ApiError;
        use fleet_core::Denial;
        let mut errors = vec![
            ApiError::Unauthorized,
            ApiError::TokenExpired,
            ApiError::NotFound,
            ApiError::Conflict,
            ApiError::BadQuery { field: None },
            ApiError::CursorInvalid,
            ApiError::UnsupportedMediaType,
            ApiError::Oversized,
            ApiError::BodyTimeout,
            ApiError::TooManyWaiters,
            ApiError::RateLimited { retry_after_s: 1 },
            ApiError::Busy,
            ApiError::Unavailable,
            ApiError::DirectoryUnavailable,
            ApiError::EvidenceKeyNotConfigured,
            ApiError::Forbidden(fleet_core::supersede::FORBIDDEN),
        ];
        for d in [
            Denial::RoleNotAllowed,
            Denial::TenantNotGranted,
            Denial::NotFound,
            Denial::SubmitterCannotApprove,
            Denial::NotRecordedApprover,
            Denial::Ambiguous,
        ] {
            errors.push(d.into());
        }
        for e in [
            DecisionError::HashMismatch,
            DecisionError::ApprovalExpired,
            DecisionError::NotPending,
            DecisionError::AlreadyStarted,
            DecisionError::NotAllowedInStatus,
            DecisionError::ChangedMeanwhile,
            DecisionError::SignatureRequired,
            DecisionError::SignatureInvalid("key_id"),
            DecisionError::InvalidField("reason"),
        ] {
            errors.push(e.into());
        }
        let codes = codes();
        for e in &errors {
            assert!(codes.contains(&e.code()), "{} is not catalogued", e.code());
        }
        for code in fleet_core::supersede::REFUSALS
            .iter()
            .chain(fleet_core::catalogue::capabilities::REFUSALS.iter())
        {
            assert!(codes.contains(code), "{code} is not catalogued");
        }
    }
}
