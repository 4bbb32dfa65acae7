//! The console as set up from its settings: the issuer people sign in with, where it is
//! served, the CRM it shows a deal's current values from, the claims that give a role and
//! tenants, and where passkeys are used. The API's state holds it.

use fleet_providers::CrmClient;

use super::oidc;
use super::passkey_site::PasskeySite;
use super::settings::{self, ConsoleSettings};

/// What the console needs besides the store: the issuer, where it is served, the CRM to
/// show a deal's current values.
pub struct Console {
    pub oidc: oidc::Oidc,
    /// Cookies get `Secure` when the public URL is https.
    pub secure_cookies: bool,
    pub session_ttl_s: u64,
    pub crm: Option<CrmClient>,
    /// The ID-token claims that give a role and tenants, when the issuer says them.
    pub access_claims: Option<AccessClaims>,
    /// Where passkeys are created and used; `None` when the public URL cannot carry
    /// them (an IP address, or plain http off `localhost`).
    pub passkeys: Option<PasskeySite>,
}

/// The names of the role claim and the tenants claim.
#[derive(Debug, Clone)]
pub struct AccessClaims {
    pub role: String,
    pub tenants: String,
}

impl Console {
    /// The console for `settings`, served at `public_url` (`API_PUBLIC_URL`); `None`
    /// when no issuer is configured.
    pub fn from_settings(
        settings: &ConsoleSettings,
        public_url: &str,
        crm: Option<CrmClient>,
    ) -> Result<Option<Console>, String> {
        let Some(issuer) = settings.oidc_issuer_url.as_deref() else {
            return Ok(None);
        };
        let base = public_url.trim_end_matches('/');
        let redirect = format!("{base}/console/auth/callback");
        let oidc = oidc::Oidc::new(
            issuer,
            &settings.oidc_client_id,
            settings.oidc_client_secret.expose(),
            &redirect,
            settings
                .oidc_id_token_algs
                .iter()
                .map(settings::IdTokenAlg::algorithm)
                .collect(),
        )?;
        Ok(Some(Console {
            oidc,
            secure_cookies: base.starts_with("https://"),
            session_ttl_s: settings.console_session_ttl_s,
            crm,
            access_claims: settings
                .oidc_role_claim
                .clone()
                .zip(settings.oidc_tenants_claim.clone())
                .map(|(role, tenants)| AccessClaims { role, tenants }),
            passkeys: PasskeySite::of(base),
        }))
    }
}
