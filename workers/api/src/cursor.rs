//! The listing's opaque cursor: where the previous page ended (creation time to the
//! microsecond, then operation id), so the next page starts strictly after it whatever
//! was inserted meanwhile (keyset pagination: no offset, no skipped or repeated rows).
//! Opaque to callers: base64url of a versioned text, never to be built by hand.
//!
//! A cursor is made for one listing's tenants (the caller's, or the one it narrowed to)
//! and names them by a digest: handed to a listing of other tenants it is refused
//! (`cursor_invalid`) rather than read as a position in someone else's history.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::DateTime;
use fleet_core::OperationId;
use fleet_store::PageKey;
use sha2::{Digest, Sha256};

const VERSION: &str = "v2";

/// Why a cursor is not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CursorError {
    /// Not a cursor this API handed out (garbled, forged, another version).
    Malformed,
    /// A cursor this API handed out for a listing of other tenants.
    OtherTenants,
}

/// The digest that names a listing's tenants, whatever their order: the first 8 bytes of
/// SHA-256 over the sorted names, one per line, in hex.
fn scope(tenants: &[String]) -> String {
    let mut sorted: Vec<&str> = tenants.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sorted.dedup();
    let digest = Sha256::digest(sorted.join("\n").as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The cursor after `key` in the listing of `tenants`.
pub fn encode(key: &PageKey, tenants: &[String]) -> String {
    URL_SAFE_NO_PAD.encode(format!(
        "{VERSION}.{}.{}.{}",
        scope(tenants),
        key.created_at.timestamp_micros(),
        key.operation_id
    ))
}

/// The key a cursor names in the listing of `tenants`.
pub fn decode(cursor: &str, tenants: &[String]) -> Result<PageKey, CursorError> {
    let (made_for, key) = parse(cursor).ok_or(CursorError::Malformed)?;
    if made_for != scope(tenants) {
        return Err(CursorError::OtherTenants);
    }
    Ok(key)
}

fn parse(cursor: &str) -> Option<(String, PageKey)> {
    if cursor.len() > 256 {
        return None;
    }
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(cursor).ok()?).ok()?;
    let mut parts = text.splitn(4, '.');
    if parts.next()? != VERSION {
        return None;
    }
    let made_for = parts.next()?;
    if made_for.len() != 16 || !made_for.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let created_at = DateTime::from_timestamp_micros(parts.next()?.parse().ok()?)?;
    let operation_id = OperationId::parse(parts.next()?).ok()?;
    Some((
        made_for.to_owned(),
        PageKey {
            created_at,
            operation_id,
        },
    ))
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

    fn tenants(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn round_trips_to_the_microsecond() {
        let mine = tenants(&["org_482", "org_483"]);
        let cursor = encode(&key(), &mine);
        assert!(
            cursor
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{cursor}"
        );
        assert_eq!(decode(&cursor, &mine), Ok(key()));
        // The same tenants in another order are the same listing.
        assert_eq!(
            decode(&cursor, &tenants(&["org_483", "org_482"])),
            Ok(key())
        );
    }

    #[test]
    fn a_cursor_made_for_one_tenant_is_refused_for_another() {
        let cursor = encode(&key(), &tenants(&["org_482"]));
        for other in [
            tenants(&["org_999"]),
            tenants(&["org_482", "org_999"]),
            tenants(&[]),
        ] {
            assert_eq!(
                decode(&cursor, &other),
                Err(CursorError::OtherTenants),
                "{other:?}"
            );
        }
    }

    #[test]
    fn anything_else_is_refused() {
        let mine = tenants(&["org_482"]);
        let scope = scope(&mine);
        let forged = |text: &str| URL_SAFE_NO_PAD.encode(text);
        for bad in [
            "".to_owned(),
            "not base64!".to_owned(),
            // The version before cursors named their tenants.
            forged("v1.1.op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8"),
            forged(&format!("v3.{scope}.1.op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8")),
            forged(&format!("v2.{scope}.soon.op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8")),
            forged(&format!("v2.{scope}.1.not_an_id")),
            forged(&format!("v2.{scope}.1")),
            forged("v2.org_482.1.op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8"),
            "A".repeat(300),
        ] {
            assert_eq!(decode(&bad, &mine), Err(CursorError::Malformed), "{bad}");
        }
    }
}
