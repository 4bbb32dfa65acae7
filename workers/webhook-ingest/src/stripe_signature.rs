//! Stripe's webhook signature (<https://docs.stripe.com/webhooks#verify-manually>), with
//! no I/O and no clock: the `Stripe-Signature` header, the raw body, the endpoint's
//! secret and "now" go in, a verdict comes out.
//!
//! The header is `t=<unix seconds>,v1=<hex>[,v1=<hex>…]` (other schemes, `v0`, are
//! skipped); the signed content is `<t>.<raw body>`, the tag HMAC-SHA256 keyed with the
//! whole `whsec_…` secret, as Stripe's libraries key it. Any `v1` may match: while a
//! secret is rolled, Stripe signs with the old and the new one. Every entry is compared
//! in constant time, so the time taken does not tell which matched or how many bytes did.
//!
//! The setting may name several endpoints' secrets, comma-separated: Stripe delivers a
//! platform's own events and its connected accounts' events to two different endpoints
//! (an endpoint is one or the other: <https://docs.stripe.com/connect/webhooks>), each
//! signing with its own secret, and both may point at this receiver. A delivery passes
//! when any `v1` matches any of them; every pair is compared, whichever matched.

use std::fmt;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::Choice;

use crate::signature::{tags_equal, Freshness, Rejection, MAX_SIGNATURE_HEADER_BYTES};

pub const HEADER: &str = "stripe-signature";
/// What every Stripe endpoint secret starts with.
pub const SECRET_PREFIX: &str = "whsec_";
/// Longest secret accepted (Stripe's are about 40 characters).
const MAX_SECRET_CHARS: usize = 255;
/// Most endpoints' secrets one receiver takes (the platform's endpoint and the Connect
/// endpoint, each possibly mid-roll, fit).
const MAX_SECRETS: usize = 4;

/// `PAYMENTS_WEBHOOK_SECRET`: the signing secrets of the endpoints that deliver here, at
/// least one. Never printed.
#[derive(Clone)]
pub struct StripeSecret(Vec<Vec<u8>>);

impl fmt::Debug for StripeSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StripeSecret(..)")
    }
}

/// Why `PAYMENTS_WEBHOOK_SECRET` was refused; no message repeats any part of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StripeSecretError {
    #[error("PAYMENTS_WEBHOOK_SECRET must be set when PAYMENTS_PROVIDER=stripe (the endpoint's whsec_ signing secret from the Stripe dashboard)")]
    Missing,
    #[error("PAYMENTS_WEBHOOK_SECRET must be whsec_ followed by letters and digits (the endpoint's signing secret from the Stripe dashboard), or up to 4 of them separated by commas (one per endpoint)")]
    Malformed,
    #[error("PAYMENTS_WEBHOOK_SECRET is set but PAYMENTS_PROVIDER is not stripe: nothing would verify with it")]
    Unused,
}

impl StripeSecret {
    /// One `whsec_…` secret, or several separated by commas (blanks around each ignored).
    pub fn parse(setting: &str) -> Result<StripeSecret, StripeSecretError> {
        let mut secrets = Vec::new();
        for secret in setting.split(',').map(str::trim) {
            let rest = secret
                .strip_prefix(SECRET_PREFIX)
                .ok_or(StripeSecretError::Malformed)?;
            if rest.is_empty()
                || secret.len() > MAX_SECRET_CHARS
                || !rest.bytes().all(|b| b.is_ascii_alphanumeric())
            {
                return Err(StripeSecretError::Malformed);
            }
            secrets.push(secret.as_bytes().to_vec());
        }
        if secrets.len() > MAX_SECRETS {
            return Err(StripeSecretError::Malformed);
        }
        Ok(StripeSecret(secrets))
    }
}

/// The header's timestamp and its `v1` tags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StripeSignature {
    pub timestamp: i64,
    pub v1: Vec<Vec<u8>>,
}

impl StripeSignature {
    /// Reads `t=…,v1=…`: exactly one `t` of digits, at least one `v1` of hex.
    pub fn parse(header: &[u8]) -> Result<StripeSignature, Rejection> {
        let malformed = Rejection::MalformedHeader(HEADER);
        if header.len() > MAX_SIGNATURE_HEADER_BYTES {
            return Err(Rejection::HeaderTooLong(HEADER));
        }
        let header = std::str::from_utf8(header).map_err(|_| malformed)?;
        let mut timestamp = None;
        let mut v1 = Vec::new();
        for item in header.split(',') {
            let (key, value) = item.trim().split_once('=').ok_or(malformed)?;
            match key {
                "t" if timestamp.is_none() => {
                    if value.is_empty()
                        || value.len() > 19
                        || !value.bytes().all(|b| b.is_ascii_digit())
                    {
                        return Err(malformed);
                    }
                    timestamp = Some(value.parse::<i64>().map_err(|_| malformed)?);
                }
                "t" => return Err(malformed),
                "v1" => v1.push(hex::decode(value).map_err(|_| malformed)?),
                _ => {}
            }
        }
        match (timestamp, v1.is_empty()) {
            (Some(timestamp), false) => Ok(StripeSignature { timestamp, v1 }),
            _ => Err(malformed),
        }
    }
}

/// Verifies `header` over `body` at `now_unix_s`, within `freshness`
/// ([`Freshness::AT_RECEIPT`] at the edge: Stripe's own 300 s tolerance).
pub fn verify(
    secret: &StripeSecret,
    header: &[u8],
    body: &[u8],
    now_unix_s: i64,
    freshness: Freshness,
) -> Result<(), Rejection> {
    let signature = StripeSignature::parse(header)?;
    if !freshness.admits(signature.timestamp, now_unix_s) {
        return Err(Rejection::TimestampOutOfTolerance);
    }
    let mut matched = Choice::from(0);
    for key in &secret.0 {
        let expected = tag(key, signature.timestamp, body);
        for candidate in &signature.v1 {
            matched |= tags_equal(&expected, candidate);
        }
    }
    if bool::from(matched) {
        Ok(())
    } else {
        Err(Rejection::NoMatchingSignature)
    }
}

/// The header Stripe would send for `body` at `timestamp`, signed with the first secret
/// (tests and tools).
pub fn sign(secret: &StripeSecret, timestamp: i64, body: &[u8]) -> String {
    format!(
        "t={timestamp},v1={}",
        hex::encode(tag(&secret.0[0], timestamp, body))
    )
}

fn tag(key: &[u8], timestamp: i64, body: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_767_225_600;
    const BODY: &[u8] = br#"{"id":"evt_1","type":"refund.updated"}"#;

    fn secret() -> StripeSecret {
        StripeSecret::parse("whsec_test0123456789abcdefABCDEF").unwrap()
    }

    fn other() -> StripeSecret {
        StripeSecret::parse("whsec_other0123456789abcdef").unwrap()
    }

    fn check(header: &str, now: i64) -> Result<(), Rejection> {
        verify(
            &secret(),
            header.as_bytes(),
            BODY,
            now,
            Freshness::AT_RECEIPT,
        )
    }

    #[test]
    fn the_header_is_t_and_a_hex_v1_keyed_with_the_whole_secret() {
        // HMAC-SHA256 keyed with the whole secret over "<t>.<body>", as Stripe documents it.
        let s = StripeSecret::parse("whsec_testsecret").unwrap();
        let mut mac = Hmac::<Sha256>::new_from_slice(b"whsec_testsecret").unwrap();
        mac.update(b"1614556800.{}");
        let expected = hex::encode(mac.finalize().into_bytes());
        assert_eq!(
            sign(&s, 1_614_556_800, b"{}"),
            format!("t=1614556800,v1={expected}")
        );
    }

    #[test]
    fn a_signed_body_passes_and_any_change_fails() {
        let header = sign(&secret(), NOW, BODY);
        assert_eq!(check(&header, NOW), Ok(()));
        assert_eq!(
            verify(
                &secret(),
                header.as_bytes(),
                b"{}",
                NOW,
                Freshness::AT_RECEIPT
            ),
            Err(Rejection::NoMatchingSignature)
        );
        let forged = sign(&other(), NOW, BODY);
        assert_eq!(check(&forged, NOW), Err(Rejection::NoMatchingSignature));
        let shifted = header.replace(&format!("t={NOW}"), &format!("t={}", NOW + 1));
        assert_eq!(check(&shifted, NOW), Err(Rejection::NoMatchingSignature));
    }

    #[test]
    fn any_v1_may_match_during_a_rotation() {
        let old = sign(&other(), NOW, BODY);
        let new = sign(&secret(), NOW, BODY);
        let v1 = |h: &str| h.split_once(",v1=").unwrap().1.to_owned();
        let both = format!("t={NOW},v1={},v1={},v0=abc", v1(&old), v1(&new));
        assert_eq!(check(&both, NOW), Ok(()));
        let neither = format!("t={NOW},v1={},v1={}", v1(&old), v1(&old));
        assert_eq!(check(&neither, NOW), Err(Rejection::NoMatchingSignature));
    }

    #[test]
    fn the_timestamp_must_be_within_300_s() {
        let header = sign(&secret(), NOW, BODY);
        assert_eq!(check(&header, NOW + 300), Ok(()));
        assert_eq!(
            check(&header, NOW + 301),
            Err(Rejection::TimestampOutOfTolerance)
        );
        assert_eq!(
            check(&header, NOW - 301),
            Err(Rejection::TimestampOutOfTolerance)
        );
    }

    #[test]
    fn malformed_headers_are_refused() {
        let malformed = Err(Rejection::MalformedHeader(HEADER));
        for header in [
            "",
            "v1=00",
            &format!("t={NOW}"),
            &format!("t={NOW},v0=00"),
            &format!("t={NOW},v1=zz"),
            &format!("t={NOW},t={NOW},v1=00"),
            &format!("t=-{NOW},v1=00"),
            "garbage",
        ] {
            assert_eq!(check(header, NOW), malformed, "{header}");
        }
        let long = format!("t={NOW},{}", "v1=00,".repeat(2_000));
        assert_eq!(check(&long, NOW), Err(Rejection::HeaderTooLong(HEADER)));
    }

    #[test]
    fn secrets_are_checked_and_never_printed() {
        assert_eq!(
            StripeSecret::parse("abc").unwrap_err(),
            StripeSecretError::Malformed
        );
        assert_eq!(
            StripeSecret::parse("whsec_").unwrap_err(),
            StripeSecretError::Malformed
        );
        assert_eq!(
            StripeSecret::parse("whsec_a b").unwrap_err(),
            StripeSecretError::Malformed
        );
        assert!(!format!("{:?}", secret()).contains("test0123"));
        for setting in [
            "whsec_a,",
            "whsec_a,sk_b",
            "whsec_a,whsec_b,whsec_c,whsec_d,whsec_e",
        ] {
            assert_eq!(
                StripeSecret::parse(setting).unwrap_err(),
                StripeSecretError::Malformed,
                "{setting}"
            );
        }
    }

    #[test]
    fn each_endpoints_secret_verifies_its_own_deliveries_and_no_other() {
        // The platform's endpoint and the Connect endpoint, each with its own secret.
        let both =
            StripeSecret::parse("whsec_test0123456789abcdefABCDEF , whsec_other0123456789abcdef")
                .unwrap();
        for signer in [secret(), other()] {
            let header = sign(&signer, NOW, BODY);
            assert_eq!(
                verify(&both, header.as_bytes(), BODY, NOW, Freshness::AT_RECEIPT),
                Ok(())
            );
        }
        let stranger = StripeSecret::parse("whsec_stranger0").unwrap();
        let header = sign(&stranger, NOW, BODY);
        assert_eq!(
            verify(&both, header.as_bytes(), BODY, NOW, Freshness::AT_RECEIPT),
            Err(Rejection::NoMatchingSignature)
        );
        // One secret alone verifies only its own endpoint's deliveries.
        let header = sign(&other(), NOW, BODY);
        assert_eq!(check(&header, NOW), Err(Rejection::NoMatchingSignature));
    }
}
