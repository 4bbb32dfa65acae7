//! The listing's opaque cursor: where the previous page ended (creation time to the
//! microsecond, then operation id), so the next page starts strictly after it whatever
//! was inserted meanwhile (keyset pagination: no offset, no skipped or repeated rows).
//! Opaque to callers: base64url of a versioned text, never to be built by hand.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::DateTime;
use fleet_core::OperationId;
use fleet_store::PageKey;

const VERSION: &str = "v1";

pub fn encode(key: &PageKey) -> String {
    URL_SAFE_NO_PAD.encode(format!(
        "{VERSION}.{}.{}",
        key.created_at.timestamp_micros(),
        key.operation_id
    ))
}

/// The key a cursor names, or `None` for anything this API did not hand out.
pub fn decode(cursor: &str) -> Option<PageKey> {
    if cursor.len() > 256 {
        return None;
    }
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(cursor).ok()?).ok()?;
    let mut parts = text.splitn(3, '.');
    if parts.next()? != VERSION {
        return None;
    }
    let created_at = DateTime::from_timestamp_micros(parts.next()?.parse().ok()?)?;
    let operation_id = OperationId::parse(parts.next()?).ok()?;
    Some(PageKey {
        created_at,
        operation_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> PageKey {
        PageKey {
            created_at: DateTime::from_timestamp_micros(1_767_225_600_123_456).unwrap(),
            operation_id: OperationId::parse("op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8").unwrap(),
        }
    }

    #[test]
    fn round_trips_to_the_microsecond() {
        let cursor = encode(&key());
        assert!(
            cursor
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{cursor}"
        );
        assert_eq!(decode(&cursor), Some(key()));
    }

    #[test]
    fn anything_else_is_refused() {
        let forged = |text: &str| URL_SAFE_NO_PAD.encode(text);
        for bad in [
            "".to_owned(),
            "not base64!".to_owned(),
            forged("v2.1.op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8"),
            forged("v1.soon.op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8"),
            forged("v1.1.not_an_id"),
            forged("v1.1"),
            "A".repeat(300),
        ] {
            assert_eq!(decode(&bad), None, "{bad}");
        }
    }
}
