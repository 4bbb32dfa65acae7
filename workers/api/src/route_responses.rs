//! The answers several routes document in the same words, each written once and named in
//! their `#[utoipa::path(responses(…))]`, so that one refusal reads alike on every route.
//! They only describe: the handlers answer with [`crate::error::ApiError`].

use utoipa::IntoResponses;

use crate::problem::Problem;

/// Each entry: a problem answer, its status and, as its doc comment, its description.
macro_rules! problem_responses {
    ($($(#[doc = $doc:literal])+ $name:ident = $status:tt;)+) => {
        $(
            $(#[doc = $doc])+
            #[derive(IntoResponses)]
            #[response(status = $status, content_type = "application/problem+json")]
            pub struct $name(pub Problem);
        )+
    };
}

problem_responses! {
    /// Missing, unknown or revoked token.
    Unauthenticated = 401;
    /// `rate_limited`: the principal's request rate is spent; retry after `Retry-After`.
    RateLimited = 429;
    /// `unsupported_media_type`: the body is not sent as `application/json`.
    NotJson = 415;
    /// `oversized`: a body larger than 64 KiB.
    BodyTooLarge = 413;
    /// `invalid_query`: an unknown query parameter (`field` names it).
    UnknownQueryParameter = 400;
    /// No such operation among the caller's tenants.
    NoSuchOperation = 404;
    /// Postgres did not answer.
    PostgresSilent = 503;
    /// Postgres did not answer; nothing was decided.
    NothingDecided = 503;
    /// Postgres did not answer; nothing was decided. Send the same request again.
    NothingDecidedSendAgain = 503;
}
