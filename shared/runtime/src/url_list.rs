//! A setting that names several servers of one cluster as a comma-separated list of URLs
//! (`AMQP_URL=amqp://u:p@node-a:5672/%2f,amqp://u:p@node-b:5672/%2f`).
//!
//! A list is cut only where a comma is followed by a scheme and `://`, so a comma inside
//! one URL (a Postgres host list `postgres://u@h1:5432,h2:5432/db`, or an unescaped comma
//! in a password) never splits it.

/// The URLs of `raw`, in the order given; a single URL is a list of one. Empty entries
/// (a trailing comma) are dropped.
pub fn split_url_list(raw: &str) -> Vec<&str> {
    let raw = raw.trim().trim_end_matches(',');
    let mut urls = Vec::new();
    let mut start = 0;
    for (comma, _) in raw.match_indices(',') {
        if comma < start {
            continue;
        }
        if starts_with_scheme(&raw[comma + 1..]) {
            urls.push(raw[start..comma].trim());
            start = comma + 1;
        }
    }
    urls.push(raw[start..].trim());
    urls.retain(|url| !url.is_empty());
    urls
}

/// `scheme://` at the start of `s`, where a scheme is a letter followed by letters,
/// digits, `+`, `-` or `.` (RFC 3986).
fn starts_with_scheme(s: &str) -> bool {
    let s = s.trim_start();
    let Some(end) = s.find("://") else {
        return false;
    };
    let scheme = &s[..end];
    scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_url_is_a_list_of_one() {
        assert_eq!(
            split_url_list("amqp://guest:guest@127.0.0.1:5672/%2f"),
            ["amqp://guest:guest@127.0.0.1:5672/%2f"]
        );
    }

    #[test]
    fn urls_are_cut_at_a_comma_before_a_scheme() {
        assert_eq!(
            split_url_list("amqp://u:p@a:5672/%2f, amqps://u:p@b:5671/%2f,amqp://c"),
            [
                "amqp://u:p@a:5672/%2f",
                "amqps://u:p@b:5671/%2f",
                "amqp://c"
            ]
        );
    }

    #[test]
    fn a_comma_inside_one_url_does_not_cut_it() {
        let hosts = "postgres://fleet@db-a:5432,db-b:5432/fleet?target_session_attrs=read-write";
        assert_eq!(split_url_list(hosts), [hosts]);
        let comma_in_password = "amqp://u:pa,ss@a:5672/%2f";
        assert_eq!(split_url_list(comma_in_password), [comma_in_password]);
    }

    #[test]
    fn empty_entries_are_dropped() {
        assert_eq!(split_url_list("amqp://a,"), ["amqp://a"]);
        assert!(split_url_list("").is_empty());
    }
}
