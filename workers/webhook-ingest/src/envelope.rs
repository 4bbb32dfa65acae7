//! `webhook.v2`: the message the receiver publishes to `webhooks.ingest` once a delivery
//! is verified. It carries the provider (from the path), when it was received, the
//! provider's three signature headers as received, and the raw body byte for byte
//! (base64), so that the consumer verifies the signature again, over exactly what was
//! signed, before anything of it is applied. Where a message came from proves nothing:
//! anything that can publish to the queue could have put it there.
//!
//! A Stripe event (`POST /webhooks/stripe`) travels in the same envelope, provider
//! `payments`, with Stripe's one `stripe-signature` header in place of the three.
//!
//! `webhook.v1` envelopes carried no signature; one is refused as unsigned.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use fleet_core::catalogue::provider_spec::PAYMENTS;
use fleet_core::ProviderName;

use crate::secrets::WebhookSecrets;
use crate::settings::KNOWN_PROVIDERS;
use crate::signature::{self, Freshness, Rejection, SignedHeaders, HEADER_SIGNATURE};
use crate::stripe_signature::{self, StripeSecret};

pub const ENVELOPE_SCHEMA: &str = "webhook.v2";
/// The schema before envelopes carried the provider's signature.
pub const UNSIGNED_SCHEMA: &str = "webhook.v1";

/// Largest envelope the consumer reads: a body at the receiver's largest limit (1 MiB),
/// base64-expanded, plus the signature headers (at most 8.3 KiB) and the other fields.
pub const MAX_ENVELOPE_BYTES: usize = 1_400 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    pub schema: String,
    pub provider: String,
    pub received_at: DateTime<Utc>,
    pub headers: Headers,
    pub body_b64: String,
}

/// The provider's signature as received: Standard Webhooks' three headers, or Stripe's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Headers {
    Standard(SignatureHeaders),
    Stripe(StripeHeaders),
}

/// Stripe's `Stripe-Signature` header, under its (lower-case) name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StripeHeaders {
    #[serde(rename = "stripe-signature")]
    pub signature: String,
}

/// The Standard Webhooks headers of a delivery, under their header names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignatureHeaders {
    #[serde(rename = "webhook-id")]
    pub id: String,
    #[serde(rename = "webhook-timestamp")]
    pub timestamp: String,
    #[serde(rename = "webhook-signature")]
    pub signature: String,
}

impl From<&SignedHeaders<'_>> for SignatureHeaders {
    fn from(headers: &SignedHeaders<'_>) -> SignatureHeaders {
        SignatureHeaders {
            id: headers.id.to_owned(),
            timestamp: headers.timestamp.to_string(),
            signature: headers.signatures.to_owned(),
        }
    }
}

/// An event whose provider signature the consumer verified: only this is ever applied.
/// The provider it is from is the envelope's [`Envelope::known_provider`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The signed `webhook-id`: the deduplication key.
    pub event_id: String,
    pub received_at: DateTime<Utc>,
    pub body: Vec<u8>,
}

/// A Stripe event whose signature the consumer verified; its id is in the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedStripe {
    pub received_at: DateTime<Utc>,
    pub body: Vec<u8>,
}

/// Why a message on `webhooks.ingest` is not usable: its dead-letter reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    #[error("larger than {MAX_ENVELOPE_BYTES} bytes")]
    Oversized,
    #[error("not a webhook envelope")]
    Malformed,
    #[error("unknown envelope schema")]
    UnsupportedSchema,
    #[error("a webhook.v1 envelope carries no provider signature")]
    Unsigned,
}

impl EnvelopeError {
    pub fn reason(self) -> &'static str {
        match self {
            EnvelopeError::Oversized => "oversized",
            EnvelopeError::Malformed => "malformed",
            EnvelopeError::UnsupportedSchema => "unsupported_schema",
            EnvelopeError::Unsigned => "signature_invalid",
        }
    }
}

/// Only the schema, read first so that an older or newer envelope is named as such.
#[derive(Deserialize)]
struct SchemaOnly {
    schema: String,
}

impl Envelope {
    pub fn new(
        provider: &str,
        headers: SignatureHeaders,
        received_at: DateTime<Utc>,
        body: &[u8],
    ) -> Envelope {
        Envelope {
            schema: ENVELOPE_SCHEMA.to_owned(),
            provider: provider.to_owned(),
            received_at,
            headers: Headers::Standard(headers),
            body_b64: STANDARD.encode(body),
        }
    }

    /// A Stripe event for the payments provider, with its `Stripe-Signature` as received.
    pub fn stripe(signature: &str, received_at: DateTime<Utc>, body: &[u8]) -> Envelope {
        Envelope {
            schema: ENVELOPE_SCHEMA.to_owned(),
            provider: PAYMENTS.name.as_str().to_owned(),
            received_at,
            headers: Headers::Stripe(StripeHeaders {
                signature: signature.to_owned(),
            }),
            body_b64: STANDARD.encode(body),
        }
    }

    pub fn is_stripe(&self) -> bool {
        matches!(self.headers, Headers::Stripe(_))
    }

    /// The provider the envelope names, if its webhooks are accepted at all.
    pub fn known_provider(&self) -> Option<ProviderName> {
        ProviderName::parse(&self.provider).filter(|p| KNOWN_PROVIDERS.contains(&p.as_str()))
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("an envelope always serialises")
    }

    /// The envelope and the raw body it carries; nothing in it is verified yet.
    pub fn parse(bytes: &[u8]) -> Result<(Envelope, Vec<u8>), EnvelopeError> {
        if bytes.len() > MAX_ENVELOPE_BYTES {
            return Err(EnvelopeError::Oversized);
        }
        let schema: SchemaOnly =
            serde_json::from_slice(bytes).map_err(|_| EnvelopeError::Malformed)?;
        match schema.schema.as_str() {
            ENVELOPE_SCHEMA => {}
            UNSIGNED_SCHEMA => return Err(EnvelopeError::Unsigned),
            _ => return Err(EnvelopeError::UnsupportedSchema),
        }
        let envelope: Envelope =
            serde_json::from_slice(bytes).map_err(|_| EnvelopeError::Malformed)?;
        let body = STANDARD
            .decode(&envelope.body_b64)
            .map_err(|_| EnvelopeError::Malformed)?;
        Ok((envelope, body))
    }

    /// Checks the provider's signature over `body` with the receiver's secrets: the same
    /// header rules and the same HMAC as at the edge, within the consumer's `freshness`.
    pub fn verify(
        self,
        body: Vec<u8>,
        secrets: &WebhookSecrets,
        now_unix_s: i64,
        freshness: Freshness,
    ) -> Result<Verified, Rejection> {
        let Headers::Standard(h) = &self.headers else {
            return Err(Rejection::MissingHeader(HEADER_SIGNATURE));
        };
        let signed = SignedHeaders::parse(
            h.id.as_bytes(),
            h.timestamp.as_bytes(),
            h.signature.as_bytes(),
        )?;
        signature::verify_within(secrets, &signed, &body, now_unix_s, freshness)?;
        Ok(Verified {
            event_id: signed.id.to_owned(),
            received_at: self.received_at,
            body,
        })
    }
}

impl Envelope {
    /// Checks Stripe's signature over `body` with the endpoint's `secret` (none: Stripe
    /// is not how payments are spoken here, so nothing Stripe-signed is trusted), within
    /// the consumer's `freshness`. Only the payments provider speaks Stripe.
    pub fn verify_stripe(
        self,
        body: Vec<u8>,
        secret: Option<&StripeSecret>,
        now_unix_s: i64,
        freshness: Freshness,
    ) -> Result<VerifiedStripe, Rejection> {
        let Headers::Stripe(h) = &self.headers else {
            return Err(Rejection::MissingHeader(stripe_signature::HEADER));
        };
        let payments = self.known_provider() == Some(PAYMENTS.name);
        let Some(secret) = secret.filter(|_| payments) else {
            return Err(Rejection::NoMatchingSignature);
        };
        stripe_signature::verify(secret, h.signature.as_bytes(), &body, now_unix_s, freshness)?;
        Ok(VerifiedStripe {
            received_at: self.received_at,
            body,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::sign;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const NOW: i64 = 1_767_225_600;

    fn secrets() -> WebhookSecrets {
        WebhookSecrets::parse(SECRET).unwrap()
    }

    fn signed(id: &str, timestamp: i64, body: &[u8]) -> SignatureHeaders {
        let signature = sign(secrets().keys().next().unwrap(), id, timestamp, body);
        SignatureHeaders {
            id: id.to_owned(),
            timestamp: timestamp.to_string(),
            signature,
        }
    }

    fn at() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-29T22:00:00.123Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn round_trips_the_headers_and_the_body_byte_for_byte() {
        let body = b"{\"id\": \"evt_1\",\n \"x\": \"\xc3\xa9\"}";
        let envelope = Envelope::new("payments", signed("evt_1", NOW, body), at(), body);
        let (parsed, raw) = Envelope::parse(&envelope.to_bytes()).unwrap();
        assert_eq!((&parsed, raw.as_slice()), (&envelope, &body[..]));
        let verified = parsed
            .verify(raw, &secrets(), NOW, Freshness::AT_RECEIPT)
            .unwrap();
        assert_eq!(
            verified,
            Verified {
                event_id: "evt_1".into(),
                received_at: at(),
                body: body.to_vec()
            }
        );
    }

    #[test]
    fn a_changed_body_id_or_timestamp_fails_verification() {
        let body = br#"{"type":"payment.succeeded"}"#;
        let verify = |headers: SignatureHeaders, body: &[u8]| {
            let (envelope, raw) =
                Envelope::parse(&Envelope::new("payments", headers, at(), body).to_bytes())
                    .unwrap();
            envelope.verify(
                raw,
                &secrets(),
                NOW,
                Freshness::within_dedup_retention(7 * 86_400),
            )
        };
        assert!(verify(signed("evt_1", NOW, body), body).is_ok());
        assert_eq!(
            verify(signed("evt_1", NOW, body), br#"{"type":"payment.failed"}"#),
            Err(Rejection::NoMatchingSignature)
        );
        assert_eq!(
            verify(
                SignatureHeaders {
                    id: "evt_2".into(),
                    ..signed("evt_1", NOW, body)
                },
                body
            ),
            Err(Rejection::NoMatchingSignature)
        );
        let later = (NOW + 1).to_string();
        assert_eq!(
            verify(
                SignatureHeaders {
                    timestamp: later,
                    ..signed("evt_1", NOW, body)
                },
                body
            ),
            Err(Rejection::NoMatchingSignature)
        );
        assert!(matches!(
            verify(
                SignatureHeaders {
                    signature: String::new(),
                    ..signed("evt_1", NOW, body)
                },
                body
            ),
            Err(Rejection::MalformedHeader(_))
        ));
        // Days old is fine on the queue (a backlog); older than the dedup retention is not.
        assert!(verify(signed("evt_1", NOW - 6 * 86_400, body), body).is_ok());
        assert_eq!(
            verify(signed("evt_1", NOW - 7 * 86_400, body), body),
            Err(Rejection::TimestampOutOfTolerance)
        );
    }

    #[test]
    fn refuses_what_is_not_a_signed_envelope() {
        assert_eq!(
            Envelope::parse(b"nope").unwrap_err(),
            EnvelopeError::Malformed
        );
        let v1 = br#"{"schema":"webhook.v1","provider":"p","event_id":"e","received_at":"2026-11-29T22:00:00Z","body_b64":""}"#;
        assert_eq!(Envelope::parse(v1).unwrap_err(), EnvelopeError::Unsigned);
        assert_eq!(EnvelopeError::Unsigned.reason(), "signature_invalid");
        let v3 = br#"{"schema":"webhook.v3"}"#;
        assert_eq!(
            Envelope::parse(v3).unwrap_err(),
            EnvelopeError::UnsupportedSchema
        );
        let headers =
            r#""headers":{"webhook-id":"e","webhook-timestamp":"1","webhook-signature":"v1,x"}"#;
        let extra = format!(
            r#"{{"schema":"webhook.v2","provider":"p","received_at":"2026-11-29T22:00:00Z",{headers},"body_b64":"","x":1}}"#
        );
        assert_eq!(
            Envelope::parse(extra.as_bytes()).unwrap_err(),
            EnvelopeError::Malformed
        );
        let no_headers = br#"{"schema":"webhook.v2","provider":"p","received_at":"2026-11-29T22:00:00Z","body_b64":""}"#;
        assert_eq!(
            Envelope::parse(no_headers).unwrap_err(),
            EnvelopeError::Malformed
        );
        let not_b64 = format!(
            r#"{{"schema":"webhook.v2","provider":"p","received_at":"2026-11-29T22:00:00Z",{headers},"body_b64":"!!"}}"#
        );
        assert_eq!(
            Envelope::parse(not_b64.as_bytes()).unwrap_err(),
            EnvelopeError::Malformed
        );
        assert_eq!(
            Envelope::parse(&vec![b' '; MAX_ENVELOPE_BYTES + 1]).unwrap_err(),
            EnvelopeError::Oversized
        );
    }

    #[test]
    fn a_stripe_envelope_round_trips_and_verifies_only_with_the_endpoint_secret() {
        let secret = StripeSecret::parse("whsec_abc123def456").unwrap();
        let other = StripeSecret::parse("whsec_zzz999").unwrap();
        let body = br#"{"id":"evt_1","type":"refund.updated"}"#;
        let header = stripe_signature::sign(&secret, NOW, body);
        let envelope = Envelope::stripe(&header, at(), body);
        let (parsed, raw) = Envelope::parse(&envelope.to_bytes()).unwrap();
        assert_eq!(parsed, envelope);
        assert!(parsed.is_stripe());
        let fresh = Freshness::within_dedup_retention(7 * 86_400);
        let ok = parsed
            .clone()
            .verify_stripe(raw.clone(), Some(&secret), NOW, fresh);
        assert_eq!(ok.unwrap().body, body.to_vec());
        for key in [Some(&other), None] {
            assert_eq!(
                parsed.clone().verify_stripe(raw.clone(), key, NOW, fresh),
                Err(Rejection::NoMatchingSignature)
            );
        }
        // Neither kind of signature stands in for the other.
        assert!(parsed
            .clone()
            .verify(raw.clone(), &secrets(), NOW, fresh)
            .is_err());
        let standard = Envelope::new("payments", signed("evt_1", NOW, body), at(), body);
        assert!(standard
            .verify_stripe(body.to_vec(), Some(&secret), NOW, fresh)
            .is_err());
        let mut elsewhere = envelope;
        elsewhere.provider = "esign".into();
        assert_eq!(
            elsewhere.verify_stripe(raw, Some(&secret), NOW, fresh),
            Err(Rejection::NoMatchingSignature)
        );
    }
}
