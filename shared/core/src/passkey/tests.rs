//! Assertions made here as an authenticator makes them (a P-256 key, the authenticator
//! data, the client data the browser writes), then changed one fact at a time.

use p256::ecdsa::signature::Signer;
use p256::ecdsa::{DerSignature, SigningKey};

use super::*;

const RP: &str = "fleet.example.com";
const ORIGIN: &str = "https://fleet.example.com";

fn authenticator(n: u8) -> SigningKey {
    SigningKey::from_slice(&[n; 32]).unwrap()
}

fn registered(key: &SigningKey) -> PasskeyKey {
    let point = key.verifying_key().to_sec1_point(false);
    PasskeyKey::from_sec1(point.as_bytes(), RP, ORIGIN).unwrap()
}

struct Ceremony<'a> {
    kind: &'a str,
    challenge: String,
    origin: &'a str,
    rp_id: &'a str,
    flags: u8,
}

fn ceremony(message: &[u8]) -> Ceremony<'static> {
    Ceremony {
        kind: "webauthn.get",
        challenge: challenge_for(message),
        origin: ORIGIN,
        rp_id: RP,
        flags: FLAG_UP | FLAG_UV,
    }
}

fn assert_with(key: &SigningKey, c: &Ceremony<'_>) -> Assertion {
    let client_data_json = serde_json::to_vec(&serde_json::json!({
        "type": c.kind, "challenge": c.challenge, "origin": c.origin, "crossOrigin": false,
    }))
    .unwrap();
    let mut authenticator_data = Sha256::digest(c.rp_id.as_bytes()).to_vec();
    authenticator_data.push(c.flags);
    authenticator_data.extend_from_slice(&7u32.to_be_bytes());
    let mut signed = authenticator_data.clone();
    signed.extend_from_slice(&Sha256::digest(&client_data_json));
    let signature: DerSignature = key.sign(&signed);
    Assertion {
        authenticator_data,
        client_data_json,
        signature: signature.as_bytes().to_vec(),
    }
}

#[test]
fn an_assertion_over_the_statements_hash_verifies_with_the_registered_passkey() {
    let key = authenticator(1);
    let a = assert_with(&key, &ceremony(b"statement"));
    assert_eq!(registered(&key).verifies(b"statement", &a), Ok(()));
}

#[test]
fn each_fact_of_the_ceremony_is_checked() {
    let key = authenticator(1);
    let passkey = registered(&key);
    let cases: Vec<(Ceremony<'_>, AssertionFault)> = vec![
        (
            Ceremony {
                kind: "webauthn.create",
                ..ceremony(b"statement")
            },
            AssertionFault::CeremonyType,
        ),
        (
            Ceremony {
                challenge: challenge_for(b"another statement"),
                ..ceremony(b"statement")
            },
            AssertionFault::Challenge,
        ),
        (
            Ceremony {
                origin: "https://evil.example",
                ..ceremony(b"statement")
            },
            AssertionFault::Origin,
        ),
        (
            Ceremony {
                rp_id: "evil.example",
                ..ceremony(b"statement")
            },
            AssertionFault::RelyingParty,
        ),
        (
            Ceremony {
                flags: FLAG_UP,
                ..ceremony(b"statement")
            },
            AssertionFault::UserNotVerified,
        ),
    ];
    for (c, fault) in cases {
        assert_eq!(
            passkey.verifies(b"statement", &assert_with(&key, &c)),
            Err(fault)
        );
    }
    // Another authenticator's signature, and a tampered one.
    let other = assert_with(&authenticator(2), &ceremony(b"statement"));
    assert_eq!(
        passkey.verifies(b"statement", &other),
        Err(AssertionFault::Signature)
    );
    let mut tampered = assert_with(&key, &ceremony(b"statement"));
    tampered.authenticator_data[36] ^= 1;
    assert_eq!(
        passkey.verifies(b"statement", &tampered),
        Err(AssertionFault::Signature)
    );
}

#[test]
fn the_stored_form_round_trips_and_refuses_anything_else() {
    let a = assert_with(&authenticator(3), &ceremony(b"m"));
    assert_eq!(Assertion::from_bytes(&a.to_bytes()), Some(a.clone()));
    let bytes = a.to_bytes();
    assert_eq!(Assertion::from_bytes(&bytes[..10]), None);
    assert_eq!(Assertion::from_bytes(&[0, 0, 0, 0]), None);
    assert_eq!(
        Assertion::from_bytes(&vec![0; MAX_ASSERTION_BYTES + 1]),
        None
    );
    let b64 = |b: &[u8]| URL_SAFE_NO_PAD.encode(b);
    assert_eq!(
        Assertion::from_parts(
            &b64(&a.authenticator_data),
            &b64(&a.client_data_json),
            &b64(&a.signature)
        ),
        Some(a.clone())
    );
    assert_eq!(Assertion::from_parts("!", "", ""), None);
}

#[test]
fn a_passkey_is_a_public_key_whose_signatures_are_assertions() {
    let key = authenticator(4);
    let public = crate::PublicKey::Passkey(registered(&key));
    assert!(public.key_id().is_passkey());
    let stored =
        crate::PublicKey::stored("es256", &public.to_stored_bytes(), Some(RP), Some(ORIGIN))
            .unwrap();
    assert_eq!(stored, public);
    assert_eq!(
        crate::PublicKey::stored("es256", &[4; 65], Some(RP), Some(ORIGIN)),
        None
    );
    let signature = crate::Signature::of_assertion(&assert_with(&key, &ceremony(b"words")));
    assert!(public.verifies(b"words", &signature));
    assert!(!public.verifies(b"other words", &signature));
    // An Ed25519 signature means nothing to a passkey.
    let ed = crate::ApproverKey::from_seed([9; 32]).sign(b"words");
    assert!(!public.verifies(b"words", &ed));
}
