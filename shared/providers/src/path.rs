//! Provider URLs from path segments. Each segment is percent-encoded (`/`, `%`, `?`, `#`
//! and the rest included), so an id is always one path level and never a query or a
//! fragment. A segment that URL parsing would not keep as a name is refused rather than
//! sent: `.` and `..` are steps (RFC 3986 removes dot segments; the `url` crate silently
//! drops them, and `%2E%2E` is the same step to a server), and an empty segment names
//! the collection above. Without the refusal a deal update on `..` goes out as `PATCH /v1/deals`.
//!
//! The identifier rule (`fleet_core::identifier`) already refuses every id made of dots
//! only at intake; this is the adapters' own guarantee, whatever reaches them.

use reqwest::Url;

/// A path segment that would not stay itself in a URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the path segment {0:?} would not name one resource (empty, `.` or `..`): not sent")]
pub struct UnsafeSegment(pub String);

/// Refuses a segment that is empty, `.` or `..`.
pub fn check_segment(segment: &str) -> Result<(), UnsafeSegment> {
    if matches!(segment, "" | "." | "..") {
        return Err(UnsafeSegment(segment.to_owned()));
    }
    Ok(())
}

/// `base` + `segments`, each percent-encoded (an id can never add or remove a path level).
pub(crate) fn endpoint(base: &Url, segments: &[&str]) -> Result<Url, UnsafeSegment> {
    for segment in segments {
        check_segment(segment)?;
    }
    let mut url = base.clone();
    url.path_segments_mut()
        .expect("base URLs are checked to be http(s) at construction")
        .pop_if_empty()
        .extend(segments);
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("http://provider.test/api/").unwrap()
    }

    fn path_of(segments: &[&str]) -> String {
        endpoint(&base(), segments).unwrap().path().to_owned()
    }

    #[test]
    fn every_segment_is_one_percent_encoded_path_level() {
        assert_eq!(path_of(&["v1", "deals", "deal_7"]), "/api/v1/deals/deal_7");
        assert_eq!(
            path_of(&["v1", "deals", "a/../../admin"]),
            "/api/v1/deals/a%2F..%2F..%2Fadmin"
        );
        assert_eq!(
            path_of(&["v1", "deals", "x?y#z"]),
            "/api/v1/deals/x%3Fy%23z"
        );
        assert_eq!(
            path_of(&["v1", "deals", "%2E%2E"]),
            "/api/v1/deals/%252E%252E"
        );
        assert_eq!(path_of(&["v1", "deals", "..x"]), "/api/v1/deals/..x");
        assert_eq!(path_of(&["v1", "deals", "..."]), "/api/v1/deals/...");
    }

    #[test]
    fn dot_and_empty_segments_are_refused_not_dropped() {
        for segment in ["..", ".", ""] {
            assert_eq!(
                endpoint(&base(), &["v1", "deals", segment]),
                Err(UnsafeSegment(segment.to_owned())),
                "{segment:?}"
            );
        }
    }

    #[test]
    fn the_url_crate_drops_dot_segments_which_is_why_they_are_refused() {
        // What the refusal guards against: the step is dropped without a word.
        let mut url = base();
        url.path_segments_mut()
            .unwrap()
            .pop_if_empty()
            .extend(["v1", "deals", ".."]);
        assert_eq!(url.path(), "/api/v1/deals");
    }
}
