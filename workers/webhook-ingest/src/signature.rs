//! Standard Webhooks verification (docs/design.md#provider-webhooks), with no I/O and no
//! clock: the three headers, the raw body bytes, the secrets and "now" go in, a verdict
//! comes out.
//!
//! The signed content is `<webhook-id>.<webhook-timestamp>.<raw body>`; the signature
//! header is a space-separated list of `v1,<base64 HMAC-SHA256>` entries (other schemes
//! are skipped), and any entry matching any configured secret passes. Tags are compared
//! with `subtle` in constant time, and every (entry, secret) pair is compared, so the
//! time taken does not tell which one matched or how many bytes did.

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::{Choice, ConstantTimeEq};

use crate::secrets::{WebhookSecrets, BASE64};

/// How far `webhook-timestamp` may be from now, either way (Stripe and Svix use the same).
pub const TOLERANCE_S: u64 = 300;
pub const MAX_ID_BYTES: usize = 255;
/// Unix seconds as plain digits: 19 fit any i64.
pub const MAX_TIMESTAMP_BYTES: usize = 19;
/// Room for dozens of signatures during a rotation; anything longer is refused unread.
pub const MAX_SIGNATURE_HEADER_BYTES: usize = 8 * 1024;

pub const HEADER_ID: &str = "webhook-id";
pub const HEADER_TIMESTAMP: &str = "webhook-timestamp";
pub const HEADER_SIGNATURE: &str = "webhook-signature";

/// Why a delivery was refused. Nothing is stored or published for any of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    #[error("header {0} is missing")]
    MissingHeader(&'static str),
    #[error("header {0} appears more than once")]
    RepeatedHeader(&'static str),
    #[error("header {0} is malformed")]
    MalformedHeader(&'static str),
    #[error("header {0} is too long")]
    HeaderTooLong(&'static str),
    #[error("webhook-timestamp is outside the accepted window around now")]
    TimestampOutOfTolerance,
    #[error("no v1 signature matches a configured secret")]
    NoMatchingSignature,
}

impl Rejection {
    /// 400 for a request that is not a Standard Webhooks delivery at all; 401 for one
    /// that is, but is not authentic now (wrong secret, tampered, replayed, stale).
    pub fn status(self) -> StatusCode {
        match self {
            Rejection::MissingHeader(_)
            | Rejection::RepeatedHeader(_)
            | Rejection::MalformedHeader(_)
            | Rejection::HeaderTooLong(_) => StatusCode::BAD_REQUEST,
            Rejection::TimestampOutOfTolerance | Rejection::NoMatchingSignature => {
                StatusCode::UNAUTHORIZED
            }
        }
    }

    /// A short stable code for the response body and logs.
    pub fn code(self) -> &'static str {
        match self {
            Rejection::MissingHeader(_) => "missing_header",
            Rejection::RepeatedHeader(_) => "repeated_header",
            Rejection::MalformedHeader(_) => "malformed_header",
            Rejection::HeaderTooLong(_) => "header_too_long",
            Rejection::TimestampOutOfTolerance => "timestamp_out_of_tolerance",
            Rejection::NoMatchingSignature => "signature_mismatch",
        }
    }
}

/// The three signature headers, checked for shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignedHeaders<'a> {
    pub id: &'a str,
    pub timestamp: i64,
    pub signatures: &'a str,
}

impl<'a> SignedHeaders<'a> {
    /// Reads the headers from a request; each must appear exactly once.
    pub fn from_headers(headers: &'a HeaderMap) -> Result<SignedHeaders<'a>, Rejection> {
        let one = |name: &'static str| -> Result<&'a [u8], Rejection> {
            let mut values = headers.get_all(name).iter();
            let value: &HeaderValue = values.next().ok_or(Rejection::MissingHeader(name))?;
            if values.next().is_some() {
                return Err(Rejection::RepeatedHeader(name));
            }
            Ok(value.as_bytes())
        };
        SignedHeaders::parse(
            one(HEADER_ID)?,
            one(HEADER_TIMESTAMP)?,
            one(HEADER_SIGNATURE)?,
        )
    }

    /// Checks raw header values: lengths first (nothing long is looked at further), then
    /// visible ASCII, an id without `.` (it delimits the signed content, so an id with a
    /// dot could shift bytes between id, timestamp and body), digits-only timestamp.
    pub fn parse(
        id: &'a [u8],
        timestamp: &'a [u8],
        signatures: &'a [u8],
    ) -> Result<SignedHeaders<'a>, Rejection> {
        bounded(HEADER_ID, id, MAX_ID_BYTES)?;
        bounded(HEADER_TIMESTAMP, timestamp, MAX_TIMESTAMP_BYTES)?;
        bounded(HEADER_SIGNATURE, signatures, MAX_SIGNATURE_HEADER_BYTES)?;
        if !id.iter().all(|&b| b.is_ascii_graphic() && b != b'.') {
            return Err(Rejection::MalformedHeader(HEADER_ID));
        }
        if !timestamp.iter().all(u8::is_ascii_digit) {
            return Err(Rejection::MalformedHeader(HEADER_TIMESTAMP));
        }
        if !signatures
            .iter()
            .all(|&b| b.is_ascii_graphic() || b == b' ')
        {
            return Err(Rejection::MalformedHeader(HEADER_SIGNATURE));
        }
        let text = |bytes: &'a [u8], name| {
            std::str::from_utf8(bytes).map_err(|_| Rejection::MalformedHeader(name))
        };
        let timestamp = text(timestamp, HEADER_TIMESTAMP)?
            .parse::<i64>()
            .map_err(|_| Rejection::MalformedHeader(HEADER_TIMESTAMP))?;
        Ok(SignedHeaders {
            id: text(id, HEADER_ID)?,
            timestamp,
            signatures: text(signatures, HEADER_SIGNATURE)?,
        })
    }
}

fn bounded(name: &'static str, value: &[u8], max: usize) -> Result<(), Rejection> {
    match value.len() {
        0 => Err(Rejection::MalformedHeader(name)),
        n if n > max => Err(Rejection::HeaderTooLong(name)),
        _ => Ok(()),
    }
}

/// How far from "now" a signature's timestamp may be, each way, for it to be accepted.
///
/// The receiver holds a delivery to Standard Webhooks' window ([`Freshness::AT_RECEIPT`]):
/// that is what stops a captured delivery from being replayed at the edge. The consumer
/// verifies the same signature again, later (a backlog, a redelivery, a message moved
/// back from the dead-letter queue), so the five minutes cannot hold there; what stops a
/// replay on the queue is the deduplication row of the event id, and that row only lives
/// for the retention. So the consumer accepts a signature as old as the retention, less
/// a margin ([`Freshness::within_dedup_retention`]), and nothing older.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Freshness {
    pub max_age_s: u64,
    pub max_ahead_s: u64,
}

/// Slack the consumer's window keeps for the receiver's own tolerance and for clocks
/// that differ between the receiver, the consumer and the database.
pub const CONSUMER_CLOCK_MARGIN_S: u64 = 3_600;

impl Freshness {
    /// At the edge: five minutes either way (Stripe and Svix use the same).
    pub const AT_RECEIPT: Freshness = Freshness {
        max_age_s: TOLERANCE_S,
        max_ahead_s: TOLERANCE_S,
    };

    /// On the queue: a signature whose event's deduplication row, kept `retention_s`
    /// from receipt, is certainly still there, so a replayed copy is found a duplicate.
    /// A delivery is received within [`TOLERANCE_S`] of its timestamp, and the row is
    /// pruned no sooner than `retention_s` after receipt.
    pub const fn within_dedup_retention(retention_s: u64) -> Freshness {
        Freshness {
            max_age_s: retention_s.saturating_sub(CONSUMER_CLOCK_MARGIN_S),
            max_ahead_s: CONSUMER_CLOCK_MARGIN_S,
        }
    }

    pub(crate) fn admits(self, timestamp: i64, now_unix_s: i64) -> bool {
        match timestamp <= now_unix_s {
            true => now_unix_s.abs_diff(timestamp) <= self.max_age_s,
            false => now_unix_s.abs_diff(timestamp) <= self.max_ahead_s,
        }
    }
}

/// Verifies a delivery received at `now_unix_s`, at the edge.
pub fn verify(
    secrets: &WebhookSecrets,
    headers: &SignedHeaders<'_>,
    body: &[u8],
    now_unix_s: i64,
) -> Result<(), Rejection> {
    verify_within(secrets, headers, body, now_unix_s, Freshness::AT_RECEIPT)
}

/// Verifies a signature over `<id>.<timestamp>.<body>` whose timestamp `freshness` admits.
pub fn verify_within(
    secrets: &WebhookSecrets,
    headers: &SignedHeaders<'_>,
    body: &[u8],
    now_unix_s: i64,
    freshness: Freshness,
) -> Result<(), Rejection> {
    if !freshness.admits(headers.timestamp, now_unix_s) {
        return Err(Rejection::TimestampOutOfTolerance);
    }
    let tags: Vec<[u8; 32]> = secrets
        .keys()
        .map(|key| tag(key, headers.id, headers.timestamp, body))
        .collect();
    let mut matched = Choice::from(0);
    for entry in headers.signatures.split(' ').filter(|e| !e.is_empty()) {
        let Some(("v1", encoded)) = entry.split_once(',') else {
            continue;
        };
        let Ok(candidate) = BASE64.decode(encoded) else {
            continue;
        };
        for tag in &tags {
            matched |= tags_equal(tag, &candidate);
        }
    }
    if bool::from(matched) {
        Ok(())
    } else {
        Err(Rejection::NoMatchingSignature)
    }
}

/// Constant time in the content; a length difference (public: every tag is 32 bytes)
/// answers at once.
pub fn tags_equal(expected: &[u8], candidate: &[u8]) -> Choice {
    expected.ct_eq(candidate)
}

/// The `v1,<base64>` entry for a delivery, as a provider computes it (tests and tools).
pub fn sign(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(tag(key, id, timestamp, body))
    )
}

fn tag(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests;
