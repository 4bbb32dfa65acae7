//! Where passkeys are created and used: the console's WebAuthn relying party, from the
//! URL it is served at.

use webauthn_rs::prelude::{Url, Webauthn, WebauthnBuilder};

/// Where passkeys are created and used: the console's relying party id (its host name)
/// and origin, from `API_PUBLIC_URL`.
pub struct PasskeySite {
    pub(super) webauthn: Webauthn,
    pub rp_id: String,
    pub origin: String,
}

impl PasskeySite {
    /// The site of the console served at `public_url`; `None` when its host is an IP
    /// address (WebAuthn scopes a passkey to a domain name: `localhost` does, `127.0.0.1`
    /// does not) or it is not https outside `localhost` (browsers offer passkeys only
    /// to secure pages).
    pub fn of(public_url: &str) -> Option<PasskeySite> {
        let url = Url::parse(public_url).ok()?;
        let host = url.host_str()?.to_owned();
        let is_name = matches!(url.host(), Some(url::Host::Domain(_)));
        let secure = url.scheme() == "https" || host == "localhost";
        if !is_name || !secure {
            return None;
        }
        let origin = url.origin().ascii_serialization();
        let webauthn = WebauthnBuilder::new(&host, &Url::parse(&origin).ok()?)
            .ok()?
            .rp_name("fleet")
            .build()
            .ok()?;
        Some(PasskeySite {
            webauthn,
            rp_id: host,
            origin,
        })
    }
}
