//! Values that must never reach a log line, an error message or `--help` output.
//!
//! [`Secret`] hides its value completely; [`RedactedUrl`] keeps a connection URL readable
//! (scheme, user, host, path) and hides its password and any credential-like query
//! parameter. Both parse with `FromStr`, so clap reads them from flags and env vars
//! directly. The only way to the raw value is the explicit `expose()`.

use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

const REDACTED: &str = "[redacted]";

/// A value whose `Debug` and `Display` print `[redacted]`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    pub fn new(value: T) -> Self {
        Secret(value)
    }

    /// The raw value. Call it only where the value is handed to the one thing that needs it.
    pub fn expose(&self) -> &T {
        &self.0
    }

    pub fn into_exposed(self) -> T {
        self.0
    }
}

impl<T> From<T> for Secret<T> {
    fn from(value: T) -> Self {
        Secret(value)
    }
}

impl<T: FromStr> FromStr for Secret<T> {
    type Err = T::Err;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse().map(Secret)
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl<T> fmt::Display for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// A secret setting that may be left unset, written `#[arg(long, env = "…",
/// optional_secret = true)]` with this trait in scope: unset, it is empty; `--help` shows
/// neither its value from the environment nor its (empty) default.
pub trait OptionalSecret {
    fn optional_secret(self, on: bool) -> Self;
}

impl OptionalSecret for clap::Arg {
    fn optional_secret(self, on: bool) -> clap::Arg {
        if !on {
            return self;
        }
        // clap's derive takes a field with no `default_value` of its own for a required
        // one: the empty default makes it optional.
        self.required(false)
            .hide_env_values(true)
            .hide_default_value(true)
            .default_value("")
    }
}

/// A connection URL (Postgres, AMQP, …) that prints as
/// `scheme://user:[redacted]@host:port/path?sslmode=require&password=[redacted]`.
///
/// Anything that does not look like `scheme://…` (a libpq `key=value` string, say) prints
/// as `[redacted]` entirely: when in doubt, hide more.
#[derive(Clone, PartialEq, Eq)]
pub struct RedactedUrl(String);

impl RedactedUrl {
    pub fn new(url: impl Into<String>) -> Self {
        RedactedUrl(url.into())
    }

    /// The raw URL, password included.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The printable form (what `Display` writes).
    pub fn redacted(&self) -> String {
        redact_url(&self.0)
    }
}

impl FromStr for RedactedUrl {
    type Err = Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(RedactedUrl(s.to_owned()))
    }
}

impl fmt::Debug for RedactedUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RedactedUrl({:?})", self.redacted())
    }
}

impl fmt::Display for RedactedUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// Query parameter names whose values are hidden (matched case-insensitively, by substring).
const SENSITIVE_PARAMS: [&str; 5] = ["pass", "pwd", "secret", "token", "key"];

/// A list of URLs (several nodes of one cluster) is redacted URL by URL, so each keeps
/// its host readable and none lends its `@` to another's password.
fn redact_url(raw: &str) -> String {
    let urls = crate::split_url_list(raw);
    if urls.len() > 1 {
        return urls
            .into_iter()
            .map(redact_one_url)
            .collect::<Vec<_>>()
            .join(",");
    }
    redact_one_url(raw)
}

fn redact_one_url(raw: &str) -> String {
    let Some(scheme_end) = raw.find("://") else {
        return REDACTED.to_owned();
    };
    let scheme = &raw[..scheme_end];
    let is_scheme = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !is_scheme {
        return REDACTED.to_owned();
    }
    let rest = &raw[scheme_end + 3..];
    // The userinfo ends at the LAST '@' anywhere: a password with an unescaped '/', '?'
    // or '#' still ends up hidden. The price is over-redaction of an odd URL, never a leak.
    let (userinfo, after) = match rest.rfind('@') {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    };
    let mut out = format!("{scheme}://");
    if let Some(userinfo) = userinfo {
        match userinfo.split_once(':') {
            Some((user, _password)) => out.push_str(&format!("{user}:{REDACTED}@")),
            None => out.push_str(&format!("{userinfo}@")),
        }
    }
    let (before_fragment, fragment) = match after.split_once('#') {
        Some((head, _)) => (head, Some(REDACTED)),
        None => (after, None),
    };
    match before_fragment.split_once('?') {
        Some((host_and_path, query)) => {
            out.push_str(host_and_path);
            out.push('?');
            out.push_str(&redact_query(query));
        }
        None => out.push_str(before_fragment),
    }
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

fn redact_query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let lower = name.to_ascii_lowercase();
            if SENSITIVE_PARAMS.iter().any(|s| lower.contains(s)) {
                format!("{name}={REDACTED}")
            } else if value.is_empty() && !pair.contains('=') {
                name.to_owned()
            } else {
                format!("{name}={value}")
            }
        })
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_never_prints_its_value() {
        let key = Secret::new("sk_live_abc123".to_owned());
        assert_eq!(format!("{key}"), "[redacted]");
        assert_eq!(format!("{key:?}"), "[redacted]");
        assert_eq!(format!("{:?}", Some(&key)), "Some([redacted])");
        assert_eq!(key.expose(), "sk_live_abc123");
        let parsed: Secret<String> = "sk_x".parse().unwrap();
        assert_eq!(parsed.expose(), "sk_x");
    }

    #[test]
    fn url_password_is_hidden_and_the_rest_kept() {
        let url = RedactedUrl::new("amqp://guest:s3cr3t@127.0.0.1:5672/%2f?heartbeat=10");
        assert_eq!(
            url.to_string(),
            "amqp://guest:[redacted]@127.0.0.1:5672/%2f?heartbeat=10"
        );
        assert!(!format!("{url:?}").contains("s3cr3t"));
        assert_eq!(
            url.expose(),
            "amqp://guest:s3cr3t@127.0.0.1:5672/%2f?heartbeat=10"
        );
    }

    #[test]
    fn every_url_of_a_list_is_redacted() {
        let urls = RedactedUrl::new("amqp://u:s3cr3t@a:5672/%2f,amqp://u:s3cr3t@b:5673/%2f");
        assert_eq!(
            urls.to_string(),
            "amqp://u:[redacted]@a:5672/%2f,amqp://u:[redacted]@b:5673/%2f"
        );
    }

    #[test]
    fn url_without_password_prints_as_is() {
        let url = RedactedUrl::new("postgres://postgres@127.0.0.1:5432/fleet");
        assert_eq!(url.to_string(), "postgres://postgres@127.0.0.1:5432/fleet");
        assert_eq!(
            RedactedUrl::new("http://127.0.0.1:8090").to_string(),
            "http://127.0.0.1:8090"
        );
    }

    #[test]
    fn a_list_of_servers_prints_every_server_and_hides_the_password() {
        // A primary and its standby in one URL (libpq's multi-host form).
        let url = RedactedUrl::new(
            "postgres://fleet__execute:s3cr3t@db1:5432,db2:5432/fleet?target_session_attrs=read-write",
        );
        assert_eq!(
            url.to_string(),
            "postgres://fleet__execute:[redacted]@db1:5432,db2:5432/fleet?target_session_attrs=read-write"
        );
    }

    #[test]
    fn credential_query_parameters_and_fragments_are_hidden() {
        let url = RedactedUrl::new(
            "postgres://u@db/fleet?sslmode=require&password=hunter2&sslkey=/k#frag",
        );
        let shown = url.to_string();
        assert_eq!(shown, "postgres://u@db/fleet?sslmode=require&password=[redacted]&sslkey=[redacted]#[redacted]");
    }

    #[test]
    fn unescaped_delimiters_in_a_password_do_not_leak_it() {
        for raw in [
            "postgres://u:pa/ss@db/fleet",
            "postgres://u:pa?ss@db/fleet",
            "postgres://u:pa#ss@db/fleet",
            "postgres://u:p@ss@db/fleet",
        ] {
            let shown = RedactedUrl::new(raw).to_string();
            assert!(!shown.contains("ss@"), "{raw} printed as {shown}");
            assert!(
                shown.starts_with("postgres://u:[redacted]@db"),
                "{raw} printed as {shown}"
            );
        }
    }

    #[test]
    fn things_that_are_not_urls_are_hidden_entirely() {
        assert_eq!(
            RedactedUrl::new("host=db user=u password=p").to_string(),
            "[redacted]"
        );
        assert_eq!(RedactedUrl::new("").to_string(), "[redacted]");
        assert_eq!(
            RedactedUrl::new("no scheme://x:y@z").to_string(),
            "[redacted]"
        );
    }
}
