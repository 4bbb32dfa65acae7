//! The API's address as people and agents reach it (`API_PUBLIC_URL`), from which links
//! handed out are built: behind a proxy or a load balancer it is not the address the
//! process listens on. The approval page of an operation is in the console, at
//! `<API_PUBLIC_URL>/console/operations/<id>`.

use std::fmt;
use std::net::SocketAddr;

use axum::http::Uri;

/// `http(s)://host[:port][/prefix]`, without a trailing slash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl(String);

impl PublicUrl {
    /// An absolute http or https URL with a host and no query or fragment; a trailing
    /// slash is dropped.
    pub fn parse(text: &str) -> Result<PublicUrl, String> {
        let uri: Uri = text
            .parse()
            .map_err(|_| "not a URL (expected e.g. https://fleet.example.com)".to_owned())?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) {
            return Err("must start with http:// or https://".to_owned());
        }
        let Some(authority) = uri.authority().filter(|a| !a.host().is_empty()) else {
            return Err("must name a host".to_owned());
        };
        // It is logged and handed out in links: no credentials in it.
        if authority.as_str().contains('@') {
            return Err("must not carry a user name or password".to_owned());
        }
        if uri.query().is_some() || text.contains('#') {
            return Err("must not carry a query or a fragment".to_owned());
        }
        Ok(PublicUrl(text.trim_end_matches('/').to_owned()))
    }

    /// The default: the address the API listens on.
    pub fn listening_on(addr: SocketAddr) -> PublicUrl {
        PublicUrl(format!("http://{addr}"))
    }

    /// Where a person approves or rejects `operation_id`.
    pub fn approval_page(&self, operation_id: &str) -> String {
        format!("{}/console/operations/{operation_id}", self.0)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PublicUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_built_on_the_public_url() {
        let url = PublicUrl::parse("https://fleet.example.com/ops/").unwrap();
        assert_eq!(
            url.approval_page("op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8"),
            "https://fleet.example.com/ops/console/operations/op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8"
        );
        let listening = PublicUrl::listening_on(SocketAddr::from(([127, 0, 0, 1], 8080)));
        assert_eq!(listening.as_str(), "http://127.0.0.1:8080");
        assert_eq!(
            PublicUrl::parse("http://[::1]:8080").unwrap().as_str(),
            "http://[::1]:8080"
        );
    }

    #[test]
    fn anything_but_an_absolute_http_url_is_refused() {
        for bad in [
            "",
            "fleet.example.com",
            "/console",
            "ftp://fleet.example.com",
            "https://fleet.example.com/?a=b",
            "https://fleet.example.com/#top",
            "https:///path",
            "https://user:secret@fleet.example.com",
        ] {
            assert!(PublicUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
