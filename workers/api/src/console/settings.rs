//! The console's settings: the OpenID Connect issuer people sign in with, the algorithms
//! its ID tokens may be signed with, and how long a session lasts. The console is served
//! only when an issuer is configured. Settings that would weaken the sign-in (an issuer
//! reached over plain HTTP across a network, a symmetric signature) stop fleet-api at
//! start, with the setting named.

use std::net::IpAddr;

use clap::Args;
use fleet_runtime::{OptionalSecret, Secret};
use openidconnect::core::CoreJwsSigningAlgorithm;
use openidconnect::url::{Host, Url};

#[derive(Debug, Clone, Args)]
pub struct ConsoleSettings {
    /// The OpenID Connect issuer people sign in to the console with (its discovery
    /// document is read from `<issuer>/.well-known/openid-configuration`). https, or http
    /// on this machine's loopback only (127.0.0.0/8, ::1, localhost). Unset: no console.
    #[arg(long, env = "OIDC_ISSUER_URL", value_parser = check_issuer_url)]
    pub oidc_issuer_url: Option<String>,

    /// The algorithms an ID token may be signed with, comma-separated, whatever the
    /// issuer's discovery document advertises: RS256, RS384, RS512, PS256, PS384, PS512,
    /// ES256, ES384, EdDSA. Symmetric ones (HS256, HS384, HS512) are refused.
    #[arg(long, env = "OIDC_ID_TOKEN_ALGS", value_delimiter = ',', num_args = 1..,
          default_value = "RS256,ES256", value_parser = parse_id_token_alg)]
    pub oidc_id_token_algs: Vec<IdTokenAlg>,

    /// The console's client id at the issuer.
    #[arg(long, env = "OIDC_CLIENT_ID", default_value = "fleet-console")]
    pub oidc_client_id: String,

    /// The console's client secret at the issuer (never printed).
    #[arg(long, env = "OIDC_CLIENT_SECRET", optional_secret = true)]
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
            oidc_id_token_algs: vec![
                IdTokenAlg(CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256),
                IdTokenAlg(CoreJwsSigningAlgorithm::EcdsaP256Sha256),
            ],
            oidc_client_id: "fleet-console".into(),
            oidc_client_secret: Secret::new(String::new()),
            oidc_role_claim: None,
            oidc_tenants_claim: None,
            console_session_ttl_s: 28_800,
        }
    }
}

/// An algorithm the console accepts an ID token signed with: only asymmetric ones, whose
/// signature only the issuer's private key can make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdTokenAlg(CoreJwsSigningAlgorithm);

impl IdTokenAlg {
    pub fn algorithm(&self) -> CoreJwsSigningAlgorithm {
        self.0.clone()
    }
}

/// The asymmetric algorithms the ID-token check can verify, by their JWA names.
const ASYMMETRIC: [(&str, CoreJwsSigningAlgorithm); 9] = [
    ("RS256", CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256),
    ("RS384", CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha384),
    ("RS512", CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha512),
    ("PS256", CoreJwsSigningAlgorithm::RsaSsaPssSha256),
    ("PS384", CoreJwsSigningAlgorithm::RsaSsaPssSha384),
    ("PS512", CoreJwsSigningAlgorithm::RsaSsaPssSha512),
    ("ES256", CoreJwsSigningAlgorithm::EcdsaP256Sha256),
    ("ES384", CoreJwsSigningAlgorithm::EcdsaP384Sha384),
    ("EdDSA", CoreJwsSigningAlgorithm::EdDsa),
];

/// One entry of `OIDC_ID_TOKEN_ALGS`. An HMAC (HS256, HS384, HS512) is keyed with the
/// client secret, which the console holds too: accepting one would let whoever learns the
/// secret sign an ID token for anyone. `none` signs nothing.
pub fn parse_id_token_alg(name: &str) -> Result<IdTokenAlg, String> {
    let name = name.trim();
    let allowed = || {
        ASYMMETRIC
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some((_, alg)) = ASYMMETRIC.iter().find(|(n, _)| *n == name) {
        return Ok(IdTokenAlg(alg.clone()));
    }
    if name.to_ascii_uppercase().starts_with("HS") {
        return Err(format!(
            "{name} is symmetric (an HMAC keyed with the client secret, which fleet-api holds too) and is never accepted for ID tokens; use one of {}",
            allowed()
        ));
    }
    Err(format!(
        "{name:?} is not an algorithm ID tokens may be signed with; use one of {}",
        allowed()
    ))
}

/// `OIDC_ISSUER_URL`: the ID token's keys and the code exchange travel over it, so it is
/// https, except to an issuer on this machine's loopback (a local or test issuer), which
/// no network sits between.
pub fn check_issuer_url(value: &str) -> Result<String, String> {
    let url = Url::parse(value).map_err(|e| format!("not a URL: {e}"))?;
    let loopback = match url.host() {
        Some(Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" if url.host().is_some() => Ok(value.to_owned()),
        "http" if loopback => Ok(value.to_owned()),
        _ => Err(
            "OIDC_ISSUER_URL must be an https URL (http only for an issuer on this machine's loopback: 127.0.0.0/8, ::1 or localhost)"
                .to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issuer_is_reached_over_https_or_on_the_loopback_only() {
        for good in [
            "https://id.example.com",
            "https://id.example.com/realms/fleet",
            "https://10.0.0.7:8443",
            "http://localhost:8095",
            "http://LOCALHOST",
            "http://127.0.0.1:8095",
            "http://127.3.4.5",
            "http://[::1]:8095/issuer",
        ] {
            assert_eq!(check_issuer_url(good), Ok(good.to_owned()), "{good}");
        }
        for bad in [
            "http://id.example.com",
            "http://10.0.0.7:8095",
            "http://128.0.0.1",
            "http://0.0.0.0:8095",
            "http://[::]:8095",
            "http://[::ffff:10.0.0.1]",
            "http://localhost.example.com",
            "http://mylocalhost",
            "ftp://localhost",
            "localhost:8095",
            "",
            "https://",
        ] {
            let refused = check_issuer_url(bad).unwrap_err();
            assert!(
                refused.contains("OIDC_ISSUER_URL") || refused.starts_with("not a URL"),
                "{bad:?}: {refused}"
            );
        }
        assert!(check_issuer_url("http://id.example.com")
            .unwrap_err()
            .contains("OIDC_ISSUER_URL must be an https URL"));
    }

    #[test]
    fn only_asymmetric_algorithms_sign_accepted_id_tokens() {
        for (name, alg) in ASYMMETRIC {
            assert_eq!(parse_id_token_alg(name), Ok(IdTokenAlg(alg)), "{name}");
        }
        for hmac in ["HS256", "HS384", "HS512", "hs256"] {
            let refused = parse_id_token_alg(hmac).unwrap_err();
            assert!(refused.contains("symmetric"), "{hmac}: {refused}");
        }
        for other in ["none", "ES512", "RS1", "rs256", "", "RS256 "] {
            let refused = parse_id_token_alg(other);
            // A stray space is forgiven; nothing else is.
            if other == "RS256 " {
                assert!(refused.is_ok());
            } else {
                assert!(refused.is_err(), "{other:?}");
            }
        }
    }

    #[test]
    fn the_setting_defaults_to_rs256_and_es256_and_refuses_a_list_with_an_hmac() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            console: ConsoleSettings,
        }
        let default = Cli::try_parse_from(["fleet-api"]).unwrap().console;
        assert_eq!(
            default.oidc_id_token_algs,
            ConsoleSettings::default().oidc_id_token_algs
        );
        let listed = Cli::try_parse_from(["fleet-api", "--oidc-id-token-algs", "PS256,EdDSA"])
            .unwrap()
            .console;
        assert_eq!(
            listed.oidc_id_token_algs,
            vec![
                IdTokenAlg(CoreJwsSigningAlgorithm::RsaSsaPssSha256),
                IdTokenAlg(CoreJwsSigningAlgorithm::EdDsa)
            ]
        );
        let refused = Cli::try_parse_from(["fleet-api", "--oidc-id-token-algs", "RS256,HS256"])
            .err()
            .expect("HS256 refused")
            .to_string();
        assert!(
            refused.contains("OIDC_ID_TOKEN_ALGS") || refused.contains("oidc-id-token-algs"),
            "{refused}"
        );
        assert!(refused.contains("symmetric"), "{refused}");
        let refused =
            Cli::try_parse_from(["fleet-api", "--oidc-issuer-url", "http://id.example.com"])
                .err()
                .expect("plain http refused")
                .to_string();
        assert!(refused.contains("OIDC_ISSUER_URL"), "{refused}");
    }
}
