//! The approvers' channels file (`NOTIFY_CHANNELS_FILE`), read once at start: per tenant,
//! Slack-compatible incoming webhooks and e-mail addresses, and the SMTP server e-mail
//! goes through. Secrets (a webhook's signing secret, a webhook URL that is itself a
//! credential, the SMTP password) come from files of their own and are never logged:
//! errors name the file, never its contents.
//!
//! ```toml
//! [smtp]
//! host = "smtp.example.com"
//! port = 587
//! security = "starttls"          # "tls" (implicit), "starttls", or "none" (loopback only)
//! from = "Fleet <fleet@example.com>"
//! username = "fleet"
//! password_file = "/run/secrets/smtp-password"
//!
//! [[channel]]
//! tenant = "org_482"
//! name = "payments-approvers"
//! kind = "webhook"
//! url_file = "/run/secrets/slack-payments-url"
//! secret_file = "/run/secrets/slack-payments-signing"   # optional: signs each delivery
//!
//! [[channel]]
//! tenant = "org_482"
//! name = "cfo-mail"
//! kind = "email"
//! to = ["cfo@example.com"]
//! ```

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use lettre::message::Mailbox;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    smtp: Option<SmtpFile>,
    #[serde(default)]
    channel: Vec<ChannelFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SmtpFile {
    host: String,
    port: Option<u16>,
    security: Security,
    from: String,
    username: Option<String>,
    password_file: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChannelFile {
    tenant: String,
    name: String,
    kind: KindFile,
    url: Option<String>,
    url_file: Option<PathBuf>,
    secret_file: Option<PathBuf>,
    #[serde(default)]
    to: Vec<String>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
enum KindFile {
    Webhook,
    Email,
}

/// How the SMTP connection is protected.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
pub enum Security {
    /// TLS from the first byte (port 465).
    Tls,
    /// Plain, then STARTTLS, required (port 587).
    Starttls,
    /// Plain text: only to a server on this machine's loopback.
    None,
}

/// The SMTP server and sender, with the password read.
#[derive(Clone)]
pub struct Smtp {
    pub host: String,
    pub port: u16,
    pub security: Security,
    pub from: Mailbox,
    pub credentials: Option<(String, String)>,
}

/// Where one channel delivers.
#[derive(Clone)]
pub enum Target {
    /// A Slack-compatible incoming webhook; `key` signs each delivery when given.
    Webhook {
        url: reqwest::Url,
        key: Option<Vec<u8>>,
    },
    Email {
        to: Vec<Mailbox>,
    },
}

impl Target {
    /// The kind as metrics and logs name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Target::Webhook { .. } => "webhook",
            Target::Email { .. } => "email",
        }
    }
}

/// Every configured channel, by tenant and name.
#[derive(Clone, Default)]
pub struct Channels {
    pub smtp: Option<Smtp>,
    by_tenant: BTreeMap<String, BTreeMap<String, Target>>,
}

impl Channels {
    pub fn get(&self, tenant: &str, name: &str) -> Option<&Target> {
        self.by_tenant.get(tenant)?.get(name)
    }

    /// `{"<tenant>": ["<channel>", …]}`: what the database plans notices into.
    pub fn names_by_tenant(&self) -> Value {
        Value::Object(
            self.by_tenant
                .iter()
                .map(|(t, chans)| (t.clone(), chans.keys().cloned().collect()))
                .collect(),
        )
    }

    /// The tenants that have at least one channel.
    pub fn tenants(&self) -> Vec<String> {
        self.by_tenant.keys().cloned().collect()
    }

    pub fn count(&self) -> usize {
        self.by_tenant.values().map(BTreeMap::len).sum()
    }

    /// Reads and checks the file; the error says what is wrong and where.
    pub fn load(path: &Path) -> Result<Channels, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot be read: {e}", path.display()))?;
        let file: File =
            toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), e.message()))?;
        let smtp = file.smtp.map(smtp).transpose()?;
        let mut by_tenant: BTreeMap<String, BTreeMap<String, Target>> = BTreeMap::new();
        for c in file.channel {
            let at = format!("channel {:?} of tenant {:?}", c.name, c.tenant);
            if c.tenant.is_empty() {
                return Err(format!("{at}: the tenant is empty"));
            }
            if c.name.is_empty()
                || c.name.len() > 64
                || !c.name.chars().all(|ch| {
                    ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-' || ch == '_'
                })
            {
                return Err(format!(
                    "{at}: a name is 1 to 64 lowercase letters, digits, '-' and '_'"
                ));
            }
            let target = match c.kind {
                KindFile::Webhook => webhook(&c).map_err(|e| format!("{at}: {e}"))?,
                KindFile::Email => {
                    if smtp.is_none() {
                        return Err(format!("{at}: e-mail needs an [smtp] section"));
                    }
                    email(&c).map_err(|e| format!("{at}: {e}"))?
                }
            };
            let chans = by_tenant.entry(c.tenant.clone()).or_default();
            if chans.insert(c.name.clone(), target).is_some() {
                return Err(format!("{at}: named twice"));
            }
        }
        Ok(Channels { smtp, by_tenant })
    }
}

fn smtp(s: SmtpFile) -> Result<Smtp, String> {
    if s.host.is_empty() {
        return Err("[smtp]: the host is empty".into());
    }
    if s.security == Security::None && !is_loopback(&s.host) {
        return Err(format!(
            "[smtp]: security \"none\" (plain text) only to a server on loopback, not {:?}; use \"starttls\" or \"tls\"",
            s.host
        ));
    }
    let from: Mailbox = s
        .from
        .parse()
        .map_err(|e| format!("[smtp]: from {:?} is not an address: {e}", s.from))?;
    let credentials = match (s.username, s.password_file) {
        (Some(user), Some(file)) => Some((user, secret_file(&file)?)),
        (None, None) => None,
        _ => return Err("[smtp]: username and password_file go together".into()),
    };
    let port = s.port.unwrap_or(match s.security {
        Security::Tls => 465,
        Security::Starttls => 587,
        Security::None => 25,
    });
    Ok(Smtp {
        host: s.host,
        port,
        security: s.security,
        from,
        credentials,
    })
}

fn webhook(c: &ChannelFile) -> Result<Target, String> {
    if !c.to.is_empty() {
        return Err("`to` is for e-mail channels".into());
    }
    let text = match (&c.url, &c.url_file) {
        (Some(u), None) => u.clone(),
        (None, Some(f)) => secret_file(f)?,
        _ => return Err("give the webhook's url or url_file (one of them)".into()),
    };
    // The URL may itself be a credential (Slack's are): errors do not repeat it.
    let url = reqwest::Url::parse(text.trim()).map_err(|_| "the webhook URL is not a URL")?;
    let host = url.host_str().unwrap_or_default();
    match url.scheme() {
        "https" => {}
        "http" if is_loopback(host) => {}
        _ => return Err("the webhook URL must be https (http only on loopback)".into()),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("the webhook URL must not carry a user name or password".into());
    }
    let key = match &c.secret_file {
        Some(f) => Some(
            fleet_core::approval_notice::webhook_key(&secret_file(f)?).ok_or_else(|| {
                format!(
                    "{}: holds no usable secret (empty, or bad base64 after whsec_)",
                    f.display()
                )
            })?,
        ),
        None => None,
    };
    Ok(Target::Webhook { url, key })
}

fn email(c: &ChannelFile) -> Result<Target, String> {
    if c.url.is_some() || c.url_file.is_some() || c.secret_file.is_some() {
        return Err("url, url_file and secret_file are for webhook channels".into());
    }
    if c.to.is_empty() {
        return Err("an e-mail channel needs at least one address in `to`".into());
    }
    let to =
        c.to.iter()
            .map(|a| {
                a.parse::<Mailbox>()
                    .map_err(|e| format!("{a:?} is not an address: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
    Ok(Target::Email { to })
}

/// A secret file's text, without its trailing line break; the error names the file only.
fn secret_file(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot be read: {}", path.display(), e.kind()))?;
    let t = text.trim_end_matches(['\n', '\r']).to_owned();
    if t.trim().is_empty() {
        return Err(format!("{}: is empty", path.display()));
    }
    Ok(t)
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Channels, String> {
        let dir = std::env::temp_dir().join(format!("fleet-notify-{}", ulid_like()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("secret"),
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n",
        )
        .unwrap();
        let text = text.replace("SECRET", &dir.join("secret").display().to_string());
        std::fs::write(dir.join("channels.toml"), text).unwrap();
        let r = Channels::load(&dir.join("channels.toml"));
        std::fs::remove_dir_all(&dir).unwrap();
        r
    }

    fn ulid_like() -> String {
        format!("{}-{:?}", std::process::id(), std::thread::current().id()).replace(['(', ')'], "")
    }

    #[test]
    fn a_file_of_webhooks_and_email_is_read_by_tenant() {
        let c = load(
            r#"
            [smtp]
            host = "127.0.0.1"
            port = 2525
            security = "none"
            from = "Fleet <fleet@example.com>"

            [[channel]]
            tenant = "org_482"
            name = "chat"
            kind = "webhook"
            url = "https://hooks.example.com/services/T0/B0/x"
            secret_file = "SECRET"

            [[channel]]
            tenant = "org_482"
            name = "mail"
            kind = "email"
            to = ["cfo@example.com", "Ann <ann@example.com>"]
            "#,
        )
        .unwrap();
        assert_eq!(c.count(), 2);
        assert_eq!(c.get("org_482", "chat").unwrap().kind(), "webhook");
        assert_eq!(c.get("org_482", "mail").unwrap().kind(), "email");
        assert!(c.get("org_9", "chat").is_none());
        assert_eq!(
            c.names_by_tenant(),
            serde_json::json!({"org_482": ["chat", "mail"]})
        );
    }

    #[test]
    fn wrong_files_are_refused_with_what_is_wrong() {
        let refused = |text: &str, says: &str| {
            let e = load(text).err().unwrap_or_default();
            assert!(e.contains(says), "{e:?} should say {says:?}");
        };
        refused(
            "[[channel]]\ntenant = \"t\"\nname = \"a\"\nkind = \"webhook\"\nurl = \"http://hooks.example.com/x\"",
            "must be https",
        );
        refused(
            "[[channel]]\ntenant = \"t\"\nname = \"a\"\nkind = \"email\"\nto = [\"a@example.com\"]",
            "needs an [smtp] section",
        );
        refused(
            "[smtp]\nhost = \"smtp.example.com\"\nsecurity = \"none\"\nfrom = \"f@example.com\"",
            "only to a server on loopback",
        );
        refused(
            "[[channel]]\ntenant = \"t\"\nname = \"A B\"\nkind = \"webhook\"\nurl = \"https://h.example.com/\"",
            "lowercase letters",
        );
        refused(
            "[[channel]]\ntenant = \"t\"\nname = \"a\"\nkind = \"webhook\"\nurl = \"https://h.example.com/\"\n[[channel]]\ntenant = \"t\"\nname = \"a\"\nkind = \"webhook\"\nurl = \"https://h.example.com/\"",
            "named twice",
        );
        refused(
            "[[channel]]\ntenant = \"t\"\nname = \"a\"\nkind = \"webhook\"\nurl = \"https://h.example.com/\"\nsecret_file = \"/nonexistent/secret\"",
            "/nonexistent/secret: cannot be read",
        );
        refused(
            "[[channel]]\ntenant = \"t\"\nname = \"a\"\nkind = \"sms\"",
            "sms",
        );
        // A URL that is a credential is not repeated in the error.
        let e = load("[[channel]]\ntenant = \"t\"\nname = \"a\"\nkind = \"webhook\"\nurl = \"ftp://hooks.example.com/T0/secret-token\"").err().unwrap();
        assert!(!e.contains("secret-token"), "{e}");
    }
}
