use axum::http::HeaderMap;

use super::*;

const OLD: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const NEW: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
const NOW: i64 = 1_767_225_600;
const BODY: &[u8] =
    br#"{"id":"evt_1","type":"payment.succeeded","data":{"object":{"id":"pay_1"}}}"#;

fn key(secret: &str) -> Vec<u8> {
    BASE64
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap()
}

fn secrets(list: &[&str]) -> WebhookSecrets {
    WebhookSecrets::parse(&list.join(",")).unwrap()
}

fn check(
    secrets: &WebhookSecrets,
    id: &str,
    ts: i64,
    signatures: &str,
    body: &[u8],
) -> Result<(), Rejection> {
    let ts = ts.to_string();
    let headers = SignedHeaders::parse(id.as_bytes(), ts.as_bytes(), signatures.as_bytes())?;
    verify(secrets, &headers, body, NOW)
}

#[test]
fn a_valid_signature_passes() {
    let sig = sign(&key(OLD), "evt_1", NOW, BODY);
    assert_eq!(check(&secrets(&[OLD]), "evt_1", NOW, &sig, BODY), Ok(()));
}

#[test]
fn a_signature_with_another_secret_fails() {
    let sig = sign(&key(NEW), "evt_1", NOW, BODY);
    assert_eq!(
        check(&secrets(&[OLD]), "evt_1", NOW, &sig, BODY),
        Err(Rejection::NoMatchingSignature)
    );
}

#[test]
fn one_changed_byte_or_reformatted_json_fails() {
    let sig = sign(&key(OLD), "evt_1", NOW, BODY);
    let mut tampered = BODY.to_vec();
    tampered[10] ^= 1;
    assert_eq!(
        check(&secrets(&[OLD]), "evt_1", NOW, &sig, &tampered),
        Err(Rejection::NoMatchingSignature)
    );
    let reformatted =
        serde_json::to_vec_pretty(&serde_json::from_slice::<serde_json::Value>(BODY).unwrap())
            .unwrap();
    assert_eq!(
        check(&secrets(&[OLD]), "evt_1", NOW, &sig, &reformatted),
        Err(Rejection::NoMatchingSignature)
    );
    // The id and the timestamp are signed too.
    assert_eq!(
        check(&secrets(&[OLD]), "evt_2", NOW, &sig, BODY),
        Err(Rejection::NoMatchingSignature)
    );
    assert_eq!(
        check(&secrets(&[OLD]), "evt_1", NOW - 1, &sig, BODY),
        Err(Rejection::NoMatchingSignature)
    );
}

#[test]
fn timestamps_300_s_away_pass_and_301_s_away_fail_both_ways() {
    for (ts, expected) in [
        (NOW - 300, Ok(())),
        (NOW + 300, Ok(())),
        (NOW - 301, Err(Rejection::TimestampOutOfTolerance)),
        (NOW + 301, Err(Rejection::TimestampOutOfTolerance)),
        (0, Err(Rejection::TimestampOutOfTolerance)),
        (i64::MAX, Err(Rejection::TimestampOutOfTolerance)),
    ] {
        let sig = sign(&key(OLD), "evt_1", ts, BODY);
        assert_eq!(
            check(&secrets(&[OLD]), "evt_1", ts, &sig, BODY),
            expected,
            "ts {ts}"
        );
    }
}

#[test]
fn during_a_rotation_either_secret_and_either_entry_passes() {
    let old_sig = sign(&key(OLD), "evt_1", NOW, BODY);
    let new_sig = sign(&key(NEW), "evt_1", NOW, BODY);
    let both = secrets(&[NEW, OLD]);
    assert_eq!(check(&both, "evt_1", NOW, &old_sig, BODY), Ok(()));
    assert_eq!(check(&both, "evt_1", NOW, &new_sig, BODY), Ok(()));
    // The provider signs with both keys: `v1,<old> v1,<new>`; a receiver knowing either passes.
    let header = format!("{old_sig} {new_sig}");
    assert_eq!(check(&secrets(&[OLD]), "evt_1", NOW, &header, BODY), Ok(()));
    assert_eq!(check(&secrets(&[NEW]), "evt_1", NOW, &header, BODY), Ok(()));
    let bogus = format!("v1,{}", BASE64.encode([7u8; 32]));
    assert_eq!(
        check(&both, "evt_1", NOW, &format!("{bogus} {bogus}"), BODY),
        Err(Rejection::NoMatchingSignature)
    );
}

#[test]
fn other_schemes_and_garbage_entries_are_skipped_never_trusted() {
    let sig = sign(&key(OLD), "evt_1", NOW, BODY);
    let v2 = sig.replacen("v1,", "v2,", 1);
    assert_eq!(
        check(&secrets(&[OLD]), "evt_1", NOW, &v2, BODY),
        Err(Rejection::NoMatchingSignature)
    );
    let noisy = format!("v1a,xx  nocomma v1,!!notbase64!! {v2} {sig}");
    assert_eq!(check(&secrets(&[OLD]), "evt_1", NOW, &noisy, BODY), Ok(()));
    assert_eq!(
        check(&secrets(&[OLD]), "evt_1", NOW, "v1,", BODY),
        Err(Rejection::NoMatchingSignature)
    );
}

#[test]
fn malformed_headers_are_refused_before_any_hmac() {
    let sig = sign(&key(OLD), "evt_1", NOW, BODY);
    let parse = |id: &[u8], ts: &[u8], s: &[u8]| SignedHeaders::parse(id, ts, s).map(|_| ());
    assert_eq!(
        parse(b"", b"1", sig.as_bytes()),
        Err(Rejection::MalformedHeader(HEADER_ID))
    );
    assert_eq!(
        parse(b"evt.1", b"1", sig.as_bytes()),
        Err(Rejection::MalformedHeader(HEADER_ID))
    );
    assert_eq!(
        parse(b"evt 1", b"1", sig.as_bytes()),
        Err(Rejection::MalformedHeader(HEADER_ID))
    );
    assert_eq!(
        parse("evt_\u{e9}".as_bytes(), b"1", sig.as_bytes()),
        Err(Rejection::MalformedHeader(HEADER_ID))
    );
    for ts in [&b"12.5"[..], b"-5", b"+5", b"1e9", b" 1", b"abc"] {
        assert_eq!(
            parse(b"evt_1", ts, sig.as_bytes()),
            Err(Rejection::MalformedHeader(HEADER_TIMESTAMP)),
            "{ts:?}"
        );
    }
    assert_eq!(
        parse(b"evt_1", b"99999999999999999999", sig.as_bytes()),
        Err(Rejection::HeaderTooLong(HEADER_TIMESTAMP))
    );
    assert_eq!(
        parse(b"evt_1", b"9999999999999999999", sig.as_bytes()),
        Err(Rejection::MalformedHeader(HEADER_TIMESTAMP))
    );
    assert_eq!(
        parse(&[b'a'; 256], b"1", sig.as_bytes()),
        Err(Rejection::HeaderTooLong(HEADER_ID))
    );
    let long = format!("{sig} ").repeat(200);
    assert!(long.len() > MAX_SIGNATURE_HEADER_BYTES);
    assert_eq!(
        parse(b"evt_1", b"1", long.as_bytes()),
        Err(Rejection::HeaderTooLong(HEADER_SIGNATURE))
    );
    assert_eq!(
        parse(b"evt_1", b"1", b"v1,abc\tdef"),
        Err(Rejection::MalformedHeader(HEADER_SIGNATURE))
    );
}

#[test]
fn headers_must_each_appear_exactly_once() {
    let sig = sign(&key(OLD), "evt_1", NOW, BODY);
    let mut headers = HeaderMap::new();
    headers.insert(HEADER_ID, "evt_1".parse().unwrap());
    headers.insert(HEADER_TIMESTAMP, NOW.to_string().parse().unwrap());
    assert_eq!(
        SignedHeaders::from_headers(&headers),
        Err(Rejection::MissingHeader(HEADER_SIGNATURE))
    );
    headers.insert(HEADER_SIGNATURE, sig.parse().unwrap());
    assert_eq!(
        SignedHeaders::from_headers(&headers).unwrap(),
        SignedHeaders {
            id: "evt_1",
            timestamp: NOW,
            signatures: &sig
        }
    );
    headers.append(HEADER_ID, "evt_2".parse().unwrap());
    assert_eq!(
        SignedHeaders::from_headers(&headers),
        Err(Rejection::RepeatedHeader(HEADER_ID))
    );
}

#[test]
fn tags_are_compared_with_subtle() {
    let a = [1u8; 32];
    let mut b = a;
    assert!(bool::from(tags_equal(&a, &b)));
    b[31] ^= 0x80;
    assert!(!bool::from(tags_equal(&a, &b)));
    assert!(!bool::from(tags_equal(&a, &a[..31])));
    assert!(!bool::from(tags_equal(&a, &[])));
}

#[test]
fn rejections_map_to_400_for_shape_and_401_for_authenticity() {
    assert_eq!(
        Rejection::MissingHeader(HEADER_ID).status(),
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        Rejection::HeaderTooLong(HEADER_SIGNATURE).status(),
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        Rejection::TimestampOutOfTolerance.status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        Rejection::NoMatchingSignature.status(),
        StatusCode::UNAUTHORIZED
    );
}

#[test]
fn the_consumer_window_reaches_back_to_the_dedup_retention_less_a_margin() {
    let window = Freshness::within_dedup_retention(7 * 86_400);
    assert_eq!(
        window,
        Freshness {
            max_age_s: 7 * 86_400 - CONSUMER_CLOCK_MARGIN_S,
            max_ahead_s: CONSUMER_CLOCK_MARGIN_S
        }
    );
    let at = |ts: i64| {
        let sig = sign(&key(OLD), "evt_1", ts, BODY);
        let ts_text = ts.to_string();
        let headers = SignedHeaders::parse(b"evt_1", ts_text.as_bytes(), sig.as_bytes()).unwrap();
        verify_within(&secrets(&[OLD]), &headers, BODY, NOW, window)
    };
    let oldest = NOW - i64::try_from(window.max_age_s).unwrap();
    assert_eq!(at(oldest), Ok(()));
    assert_eq!(at(oldest - 1), Err(Rejection::TimestampOutOfTolerance));
    assert_eq!(at(NOW - 301), Ok(()), "a backlog is not a reason to refuse");
    assert_eq!(at(NOW + 3_600), Ok(()));
    assert_eq!(at(NOW + 3_601), Err(Rejection::TimestampOutOfTolerance));
    // The window never lets a wrong signature through.
    let sig = sign(&key(NEW), "evt_1", NOW, BODY);
    let now_text = NOW.to_string();
    let headers = SignedHeaders::parse(b"evt_1", now_text.as_bytes(), sig.as_bytes()).unwrap();
    assert_eq!(
        verify_within(&secrets(&[OLD]), &headers, BODY, NOW, window),
        Err(Rejection::NoMatchingSignature)
    );
    assert_eq!(
        Freshness::AT_RECEIPT,
        Freshness {
            max_age_s: TOLERANCE_S,
            max_ahead_s: TOLERANCE_S
        }
    );
}
