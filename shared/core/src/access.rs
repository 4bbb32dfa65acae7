//! Who may call the HTTP API: principals' roles and the bearer tokens that authenticate
//! them (what each role may do is in `authz`). Pure: the random bytes of a new token are an
//! input, and only the SHA-256 of a token is ever stored or compared.

use std::fmt;

use sha2::{Digest, Sha256};

use crate::by_name::{display_by_name, serialize_by_name};
use crate::identifier::check_identifier;
use crate::visible::reveal;

// What each role may do is decided with the other authorization rules, in `authz`.
pub use crate::authz::ApiAction;

/// A principal's role. Stored with the principal; what it permits is `authz`'s to say
/// ([`Role::may`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// A program that proposes side effects (submits intents) and follows them.
    Agent,
    /// A person who approves or rejects what agents proposed.
    Approver,
    /// A person who settles escalated operations.
    Operator,
    /// A person who manages principals and tokens.
    Admin,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Agent, Role::Approver, Role::Operator, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Agent => "agent",
            Role::Approver => "approver",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

serialize_by_name!(Role);
display_by_name!(Role);

/// Whether `name` can name a principal: an identifier ([`crate::identifier`]) narrowed to
/// 1 to 128 ASCII letters, digits and `._@:-`, starting with a letter or digit (it appears
/// in logs, in `submitted_by` and in signed approval statements, so nothing else).
pub fn is_principal_name(name: &str) -> bool {
    check_principal_name(name).is_ok()
}

/// [`is_principal_name`], with the reason when it is not one.
pub fn check_principal_name(name: &str) -> Result<(), String> {
    check_identifier(name)
        .map_err(|p| format!("{} cannot name a principal: it {p}", reveal(name)))?;
    let mut bytes = name.bytes();
    let plain = bytes.next().is_some_and(|b| b.is_ascii_alphanumeric())
        && name.len() <= 128
        && bytes.all(|b| b.is_ascii_alphanumeric() || b".-_@:".contains(&b));
    if plain {
        Ok(())
    } else {
        Err(format!(
            "{} cannot name a principal: 1 to 128 letters, digits and ._@:- starting with a letter or digit",
            reveal(name)
        ))
    }
}

/// The most characters of a tenant id, as intent.v1's `tenant_id`.
pub const MAX_TENANT_CHARS: usize = crate::intent_limits::MAX_TEXT_CHARS;

/// Whether `tenant` can be granted to a principal or a token: what intent.v1 accepts as a
/// `tenant_id` (an identifier of at most [`MAX_TENANT_CHARS`] characters), so that a
/// tenant granted can be acted for and is shown as what it is.
pub fn check_tenant_id(tenant: &str) -> Result<(), String> {
    if tenant.chars().count() > MAX_TENANT_CHARS {
        return Err(format!(
            "a tenant id is at most {MAX_TENANT_CHARS} characters"
        ));
    }
    check_identifier(tenant).map_err(|p| format!("{} cannot name a tenant: it {p}", reveal(tenant)))
}

/// A role and tenants a sign-in's ID token claimed, when the console takes them from
/// claims instead of the principals table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedAccess {
    pub role: Role,
    pub tenants: Vec<String>,
}

/// The most tenants one claim may grant.
pub const MAX_CLAIMED_TENANTS: usize = 256;

/// Reads the role claim (one role's name) and the tenants claim (an array of tenant ids)
/// of a verified ID token. Anything else — a missing claim, an unknown role, a tenant that
/// is not a short visible word — refuses the sign-in (the reason says which): a person is
/// never given a default role or tenant by accident.
pub fn claimed_access(
    role: Option<&serde_json::Value>,
    tenants: Option<&serde_json::Value>,
) -> Result<ClaimedAccess, &'static str> {
    let role = role
        .and_then(|r| r.as_str())
        .and_then(Role::parse)
        .ok_or("the role claim is missing or names no role")?;
    let tenants = tenants
        .and_then(|t| t.as_array())
        .ok_or("the tenants claim is missing or not a list")?;
    let valid = |t: &str| (1..=128).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_graphic());
    let mut out: Vec<String> = Vec::with_capacity(tenants.len());
    for t in tenants {
        match t.as_str() {
            Some(t) if valid(t) => out.push(t.to_owned()),
            _ => return Err("a tenant in the tenants claim is not a tenant id"),
        }
    }
    if out.len() > MAX_CLAIMED_TENANTS {
        return Err("the tenants claim lists too many tenants");
    }
    out.sort();
    out.dedup();
    Ok(ClaimedAccess { role, tenants: out })
}

/// Every token starts with this, so a leaked one is recognisable (and scannable) as ours.
pub const TOKEN_PREFIX: &str = "fleet_";
/// Random bytes in a token: 256 bits, far beyond guessing.
pub const TOKEN_SECRET_BYTES: usize = 32;
/// Characters of the token kept in clear to name it (`fleet_` + 8 hex digits): enough to
/// tell tokens apart in a listing, far too few to use.
pub const TOKEN_DISPLAY_LEN: usize = TOKEN_PREFIX.len() + 8;
const TOKEN_LEN: usize = TOKEN_PREFIX.len() + 2 * TOKEN_SECRET_BYTES;

/// A bearer token in clear: shown once when created, never stored.
pub struct Token(String);

impl Token {
    /// The token made of these random bytes (from the operating system's generator).
    pub fn from_secret_bytes(bytes: &[u8; TOKEN_SECRET_BYTES]) -> Token {
        Token(format!("{TOKEN_PREFIX}{}", hex::encode(bytes)))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// What is stored to recognise it.
    pub fn hash(&self) -> TokenHash {
        TokenHash::of(&self.0)
    }

    /// The clear beginning that names it in listings and `revoke`.
    pub fn display_prefix(&self) -> &str {
        &self.0[..TOKEN_DISPLAY_LEN]
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token([redacted])")
    }
}

/// `sha256:` + lower-case hex of SHA-256 over the token's bytes. Tokens carry 256 random
/// bits, so a plain (unsalted, fast) hash is enough: nothing can be guessed from it, and
/// looking a presented token up by its hash compares no secret byte by byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenHash(String);

impl TokenHash {
    fn of(token: &str) -> TokenHash {
        TokenHash(format!(
            "sha256:{}",
            hex::encode(Sha256::digest(token.as_bytes()))
        ))
    }

    /// The hash of a presented token, or `None` when it cannot be one of ours (wrong
    /// prefix, length or alphabet): such a request is refused without a database query.
    pub fn of_presented(token: &str) -> Option<TokenHash> {
        let secret = token.strip_prefix(TOKEN_PREFIX)?;
        let well_formed = token.len() == TOKEN_LEN
            && secret
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        well_formed.then(|| TokenHash::of(token))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The tenants a token acts for: its principal's, narrowed to the token's own list when it
/// was created with one (`None`: all of them, now and later). The principal's grants
/// always bound it, so a tenant taken from the principal is taken from its tokens too.
pub fn token_tenants(principal: &[String], limit: Option<&[String]>) -> Vec<String> {
    principal
        .iter()
        .filter(|t| limit.is_none_or(|l| l.contains(t)))
        .cloned()
        .collect()
}

const SECONDS_PER: [(char, u64); 4] = [('d', 86_400), ('h', 3_600), ('m', 60), ('s', 1)];

/// How long a new token is accepted: a whole number and a unit, `s`, `m`, `h` or `d`
/// (`90d`, `12h`, `90m`), from one second to [`TokenLifetime::MAX`]. Every token ends: a
/// leaked one stops working by itself, and one nobody rotates is noticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenLifetime(u64);

impl TokenLifetime {
    /// What `fleetctl token create` gives when not told: 90 days.
    pub const DEFAULT: TokenLifetime = TokenLifetime(90 * 86_400);
    /// The longest a token may live: a year.
    pub const MAX: TokenLifetime = TokenLifetime(365 * 86_400);

    pub fn parse(s: &str) -> Result<TokenLifetime, String> {
        let refused = || {
            format!(
                "{s:?} is not a token lifetime: a whole number and s, m, h or d (e.g. 90d, 12h, 90m), at most {}",
                TokenLifetime::MAX
            )
        };
        let unit = s.chars().last().ok_or_else(refused)?;
        let per = SECONDS_PER
            .iter()
            .find(|(u, _)| *u == unit)
            .map(|(_, per)| *per)
            .ok_or_else(refused)?;
        let number = &s[..s.len() - 1];
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            return Err(refused());
        }
        let secs = number
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(per))
            .ok_or_else(refused)?;
        if secs == 0 || secs > TokenLifetime::MAX.0 {
            return Err(refused());
        }
        Ok(TokenLifetime(secs))
    }

    pub fn as_secs(self) -> u64 {
        self.0
    }
}

impl fmt::Display for TokenLifetime {
    /// In the largest unit that divides it: `90d`, `36h`, `45s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (unit, per) = SECONDS_PER
            .iter()
            .find(|(_, per)| self.0.is_multiple_of(*per))
            .copied()
            .unwrap_or(('s', 1));
        write!(f, "{}{unit}", self.0 / per)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn claims_give_a_role_and_tenants_only_when_both_are_well_formed() {
        let got = claimed_access(
            Some(&json!("approver")),
            Some(&json!(["org_9", "org_482", "org_9"])),
        )
        .unwrap();
        assert_eq!(
            got,
            ClaimedAccess {
                role: Role::Approver,
                tenants: vec!["org_482".into(), "org_9".into()]
            }
        );
        let refused = [
            (None, Some(json!(["org_1"]))),
            (Some(json!("root")), Some(json!(["org_1"]))),
            (Some(json!(["approver"])), Some(json!(["org_1"]))),
            (Some(json!("approver")), None),
            (Some(json!("approver")), Some(json!("org_1"))),
            (Some(json!("approver")), Some(json!(["org 1"]))),
            (Some(json!("approver")), Some(json!([7]))),
            (Some(json!("approver")), Some(json!([""]))),
        ];
        for (role, tenants) in refused {
            assert!(
                claimed_access(role.as_ref(), tenants.as_ref()).is_err(),
                "{role:?} {tenants:?}"
            );
        }
    }

    use super::*;

    #[test]
    fn roles_round_trip_and_unknown_ones_are_refused() {
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("root"), None);
        assert_eq!(Role::parse("Agent"), None);
    }

    #[test]
    fn principal_names_are_plain_identifiers() {
        for good in [
            "agent-7",
            "billing.bot@org_482",
            "a",
            "svc:reports",
            &"x".repeat(128),
        ] {
            assert!(is_principal_name(good), "{good}");
        }
        for bad in [
            "",
            "-agent",
            "agent 7",
            "agent\n",
            "émile",
            &"x".repeat(129),
            "agent\u{202E}7",
            "agent\u{200B}7",
            "\u{0430}gent-7",
        ] {
            assert!(!is_principal_name(bad), "{bad:?}");
        }
        let refusal = check_principal_name("agent\u{202E}7").unwrap_err();
        assert!(
            refusal.contains("⟨U+202E⟩") && !refusal.contains('\u{202E}'),
            "{refusal}"
        );
    }

    #[test]
    fn tenants_granted_are_identifiers_as_intents_name_them() {
        for good in ["org_482", "заказчик_1", &"t".repeat(256)] {
            assert_eq!(check_tenant_id(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "org 482",
            "org_\u{202E}284",
            "org\u{200B}_482",
            "\u{043E}rg_482",
            "ѕсоре",
            &"t".repeat(257),
        ] {
            assert!(check_tenant_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_token_is_prefixed_high_entropy_hex_and_hashes_to_what_is_presented() {
        let token = Token::from_secret_bytes(&[0xab; TOKEN_SECRET_BYTES]);
        assert!(token.expose().starts_with("fleet_abab"));
        assert_eq!(token.expose().len(), 70);
        assert_eq!(token.display_prefix(), "fleet_abababab");
        assert_eq!(TokenHash::of_presented(token.expose()), Some(token.hash()));
        assert!(token.hash().as_str().starts_with("sha256:") && token.hash().as_str().len() == 71);
        assert!(!token.hash().as_str().contains(token.expose()));
        assert_eq!(format!("{token:?}"), "Token([redacted])");
    }

    #[test]
    fn what_cannot_be_a_token_is_refused_before_any_lookup() {
        let good = Token::from_secret_bytes(&[7; TOKEN_SECRET_BYTES])
            .expose()
            .to_owned();
        for bad in [
            "",
            "fleet_",
            &good[..good.len() - 1],
            &format!("{good}0"),
            &good.replace("fleet_", "fleat_"),
            &good.to_uppercase(),
            &format!("fleet_{}", "g".repeat(64)),
        ] {
            assert_eq!(TokenHash::of_presented(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn different_bytes_make_different_tokens_and_hashes() {
        let a = Token::from_secret_bytes(&[1; TOKEN_SECRET_BYTES]);
        let b = Token::from_secret_bytes(&[2; TOKEN_SECRET_BYTES]);
        assert_ne!(a.expose(), b.expose());
        assert_ne!(a.hash(), b.hash());
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_token_acts_for_its_principals_tenants_narrowed_to_its_own_list() {
        let principal = strings(&["org_1", "org_2", "org_3"]);
        assert_eq!(token_tenants(&principal, None), principal);
        assert_eq!(
            token_tenants(&principal, Some(&strings(&["org_2"]))),
            strings(&["org_2"])
        );
        // A tenant the principal no longer has is gone from its limited tokens too.
        assert_eq!(
            token_tenants(&strings(&["org_1"]), Some(&strings(&["org_1", "org_2"]))),
            strings(&["org_1"])
        );
        assert_eq!(
            token_tenants(&strings(&["org_1"]), Some(&strings(&["org_2"]))),
            Vec::<String>::new()
        );
        assert_eq!(token_tenants(&[], None), Vec::<String>::new());
    }

    #[test]
    fn a_token_lifetime_is_a_whole_number_of_one_unit_from_a_second_to_a_year() {
        for (text, secs) in [
            ("30d", 30 * 86_400),
            ("12h", 12 * 3_600),
            ("90m", 90 * 60),
            ("1s", 1),
            ("365d", 365 * 86_400),
            ("8760h", 365 * 86_400),
        ] {
            assert_eq!(
                TokenLifetime::parse(text).map(TokenLifetime::as_secs),
                Ok(secs),
                "{text}"
            );
        }
        for bad in [
            "",
            "d",
            "30",
            "0d",
            "0s",
            "366d",
            "8761h",
            "-1d",
            "+1d",
            "1.5d",
            "1 d",
            " 1d",
            "1D",
            "1w",
            "1dd",
            "99999999999999999999d",
            "18446744073709551615d",
        ] {
            let refused = TokenLifetime::parse(bad).unwrap_err();
            assert!(
                refused.contains("not a token lifetime"),
                "{bad:?}: {refused}"
            );
        }
        assert_eq!(TokenLifetime::DEFAULT.as_secs(), 90 * 86_400);
        for shown in ["90d", "36h", "90m", "45s", "365d"] {
            assert_eq!(TokenLifetime::parse(shown).unwrap().to_string(), shown);
        }
        assert_eq!(TokenLifetime::parse("24h").unwrap().to_string(), "1d");
    }
}
