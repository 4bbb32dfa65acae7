//! The console's settings: the OpenID Connect issuer people sign in with, and how long a
//! session lasts. The console is served only when an issuer is configured.

use clap::Args;
use fleet_runtime::Secret;

#[derive(Debug, Clone, Args)]
pub struct ConsoleSettings {
    /// The OpenID Connect issuer people sign in to the console with (its discovery
    /// document is read from `<issuer>/.well-known/openid-configuration`). Unset: no
    /// console.
    #[arg(long, env = "OIDC_ISSUER_URL")]
    pub oidc_issuer_url: Option<String>,

    /// The console's client id at the issuer.
    #[arg(long, env = "OIDC_CLIENT_ID", default_value = "fleet-console")]
    pub oidc_client_id: String,

    /// The console's client secret at the issuer (never printed).
    #[arg(
        long,
        env = "OIDC_CLIENT_SECRET",
        hide_env_values = true,
        hide_default_value = true,
        default_value = ""
    )]
    pub oidc_client_secret: Secret<String>,

    /// The ID-token claim that names a person's role (agent, approver, operator, admin).
    /// Set with OIDC_TENANTS_CLAIM to take roles and tenants from the issuer instead of
    /// the principals table; the principal is still the one the subject names. Unset: the
    /// principals table says.
    #[arg(long, env = "OIDC_ROLE_CLAIM", requires = "oidc_tenants_claim")]
    pub oidc_role_claim: Option<String>,

    /// The ID-token claim that lists a person's tenants (an array of tenant ids); set
    /// together with OIDC_ROLE_CLAIM.
    #[arg(long, env = "OIDC_TENANTS_CLAIM", requires = "oidc_role_claim")]
    pub oidc_tenants_claim: Option<String>,

    /// How long a console session lasts after signing in, in seconds (5 min to 7 days).
    #[arg(long, env = "CONSOLE_SESSION_TTL_S", default_value_t = 28_800,
          value_parser = clap::value_parser!(u64).range(300..=604_800))]
    pub console_session_ttl_s: u64,
}

impl Default for ConsoleSettings {
    fn default() -> Self {
        ConsoleSettings {
            oidc_issuer_url: None,
            oidc_client_id: "fleet-console".into(),
            oidc_client_secret: Secret::new(String::new()),
            oidc_role_claim: None,
            oidc_tenants_claim: None,
            console_session_ttl_s: 28_800,
        }
    }
}
