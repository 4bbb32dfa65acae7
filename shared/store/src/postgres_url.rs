//! A `postgres://` URL as libpq and tokio-postgres read it, including a list of servers:
//! `postgres://user@db1:5432,db2:5432/fleet?target_session_attrs=read-write`. That form is
//! how a deployment with a standby names both servers, so that a client reconnects to
//! whichever of them accepts writes after a failover (docs/scaling.md). The
//! `url` crate, which the rest of the store uses to rewrite users and paths, reads one
//! authority only and refuses a host list; this type keeps the list aside and lets `url`
//! handle everything else (user, password, path, options), through the first host.

use crate::StoreError;

/// A parsed `postgres://` (or `postgresql://`) URL with one host or several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresUrl {
    /// The URL with the first host of the list as its only host.
    first: url::Url,
    /// Every `host[:port]` of the list, as written.
    hosts: Vec<String>,
}

/// The URL options sqlx's Postgres driver reads (sqlx-postgres's `PgConnectOptions`
/// parser); it warns about any other.
const SQLX_OPTIONS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "statement-cache-capacity",
    "application_name",
    "options",
];

fn invalid() -> StoreError {
    StoreError::Config("DATABASE_URL is not a postgres:// URL with a host".into())
}

impl PostgresUrl {
    pub fn parse(database_url: &str) -> Result<PostgresUrl, StoreError> {
        let (scheme, rest) = database_url.split_once("://").ok_or_else(invalid)?;
        if !matches!(scheme, "postgres" | "postgresql") {
            return Err(invalid());
        }
        // The authority ends where the path, the options or a fragment begin; the user
        // part ends at its last '@' (an '@' in a password must be escaped, as `url` wants).
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(authority_end);
        let (userinfo, host_list) = match authority.rfind('@') {
            Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
            None => (None, authority),
        };
        let hosts: Vec<String> = host_list.split(',').map(str::to_owned).collect();
        for host in &hosts {
            let alone = url::Url::parse(&format!("{scheme}://{host}/")).map_err(|_| invalid())?;
            if host.is_empty() || !alone.has_host() || alone.host_str() == Some("") {
                return Err(invalid());
            }
        }
        let userinfo = userinfo.map_or(String::new(), |u| format!("{u}@"));
        let first = url::Url::parse(&format!("{scheme}://{userinfo}{}{tail}", hosts[0]))
            .map_err(|_| invalid())?;
        Ok(PostgresUrl { first, hosts })
    }

    /// The database the URL names (its path, as written), if any.
    pub fn database(&self) -> Option<&str> {
        Some(self.first.path().trim_start_matches('/')).filter(|d| !d.is_empty())
    }

    /// The database the URL names as the server knows it: its path with percent-escapes
    /// decoded, as libpq reads it (`fleet%2Dx` and `fleet-x` are the same database).
    /// `None` when the URL names none; an error when an escape is malformed or the name is
    /// not UTF-8, which libpq would refuse too.
    pub fn database_name(&self) -> Result<Option<String>, StoreError> {
        let Some(raw) = self.database() else {
            return Ok(None);
        };
        let bad = || {
            StoreError::Config("DATABASE_URL names its database with a malformed %-escape".into())
        };
        let mut bytes = Vec::with_capacity(raw.len());
        let mut rest = raw.as_bytes();
        while let Some((&b, tail)) = rest.split_first() {
            if b == b'%' {
                let hex = tail.get(..2).ok_or_else(bad)?;
                let hex = std::str::from_utf8(hex).map_err(|_| bad())?;
                bytes.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
                rest = &tail[2..];
            } else {
                bytes.push(b);
                rest = tail;
            }
        }
        String::from_utf8(bytes).map(Some).map_err(|_| bad())
    }

    /// Another user and password, everything else kept.
    pub fn with_credentials(
        mut self,
        user: &str,
        password: Option<&str>,
    ) -> Result<PostgresUrl, StoreError> {
        self.first.set_username(user).map_err(|_| invalid())?;
        self.first.set_password(password).map_err(|_| invalid())?;
        Ok(self)
    }

    /// Another database, everything else kept.
    pub fn with_database(mut self, database: &str) -> PostgresUrl {
        self.first.set_path(&format!("/{database}"));
        self
    }

    /// How many servers the URL names.
    pub fn host_count(&self) -> usize {
        self.hosts.len()
    }

    /// The same URL naming only its `i`-th server (for a client that reads one host
    /// only, such as sqlx's migrator), or `None` past the end of the list.
    pub fn only_host(&self, i: usize) -> Option<PostgresUrl> {
        let host = self.hosts.get(i)?;
        let rest = &self.first[url::Position::AfterPort..];
        let head = &self.first[..url::Position::BeforeHost];
        let url = url::Url::parse(&format!("{head}{host}{rest}")).ok()?;
        Some(PostgresUrl {
            first: url,
            hosts: vec![host.clone()],
        })
    }

    /// The same URL without the option `name` (the others kept, in order).
    pub fn without_option(self, name: &str) -> PostgresUrl {
        self.keeping_options(|k| k != name)
    }

    /// The same URL with only the options sqlx reads. The connection-tuning options of
    /// libpq (`connect_timeout`, `keepalives_*`, `tcp_user_timeout`, …) bound the pooled
    /// tokio-postgres connections of the workers; sqlx, which only migrates and creates
    /// or drops the database, ignores them and logs a warning for each at every run, a
    /// line an operator would take for a problem.
    pub fn for_sqlx(self) -> PostgresUrl {
        self.keeping_options(|k| SQLX_OPTIONS.contains(&k))
    }

    fn keeping_options(mut self, keep: impl Fn(&str) -> bool) -> PostgresUrl {
        let kept: Vec<(String, String)> = self
            .first
            .query_pairs()
            .filter(|(k, _)| keep(k))
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        if kept.is_empty() {
            self.first.set_query(None);
        } else {
            self.first.query_pairs_mut().clear().extend_pairs(kept);
        }
        self
    }

    pub fn as_string(&self) -> String {
        let head = &self.first[..url::Position::BeforeHost];
        let rest = &self.first[url::Position::AfterPort..];
        format!("{head}{}{rest}", self.hosts.join(","))
    }
}

impl std::fmt::Display for PostgresUrl {
    /// The URL with its password (write it only where the URL is handed on, never to a
    /// log: `fleet_runtime::RedactedUrl` prints one safely).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.as_string())
    }
}

/// The URL of the one server of `database_url`'s list that accepts writes now, for the
/// clients that take a single host (sqlx: the migrations, creating and dropping a
/// database), with only the options sqlx reads ([`PostgresUrl::for_sqlx`]). A URL with one
/// host is not checked, as before. Each server is asked over its `postgres` maintenance
/// database, which exists even when the URL's database does not yet.
pub async fn writable_server(database_url: &str) -> Result<String, StoreError> {
    let url = PostgresUrl::parse(database_url)?;
    if url.host_count() == 1 {
        return Ok(url.for_sqlx().as_string());
    }
    let mut last_error = None;
    for i in 0..url.host_count() {
        let Some(one) = url.only_host(i) else {
            continue;
        };
        match accepts_writes(&one.clone().with_database("postgres").as_string()).await {
            // The option chose among servers; one server alone has nothing to choose.
            Ok(true) => return Ok(one.for_sqlx().as_string()),
            Ok(false) => {}
            Err(e) => last_error = Some(e),
        }
    }
    Err(StoreError::Config(format!(
        "no server of DATABASE_URL's {} accepts writes{}",
        url.host_count(),
        last_error.map_or(String::new(), |e| format!(" (last error: {e})"))
    )))
}

async fn accepts_writes(server_url: &str) -> Result<bool, StoreError> {
    let mut config: tokio_postgres::Config = server_url
        .parse()
        .map_err(|e: tokio_postgres::Error| StoreError::Config(e.to_string()))?;
    config.connect_timeout(std::time::Duration::from_secs(5));
    let (client, connection) = config.connect(tokio_postgres::NoTls).await?;
    let connection = tokio::spawn(connection);
    let row = client
        .query_one("SELECT NOT pg_is_in_recovery()", &[])
        .await;
    drop(client);
    let _ = connection.await;
    Ok(row?.get(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAIR: &str =
        "postgres://postgres:pw@10.0.0.1:5432,10.0.0.2:5433/fleet?target_session_attrs=read-write";

    #[test]
    fn a_host_list_is_kept_through_a_change_of_user_or_database() {
        let url = PostgresUrl::parse(PAIR).unwrap();
        assert_eq!(url.host_count(), 2);
        assert_eq!(url.database(), Some("fleet"));
        assert_eq!(url.as_string(), PAIR);
        let other = url
            .clone()
            .with_credentials("fleet__execute", None)
            .unwrap()
            .with_database("other");
        assert_eq!(
            other.to_string(),
            "postgres://fleet__execute@10.0.0.1:5432,10.0.0.2:5433/other?target_session_attrs=read-write"
        );
    }

    #[test]
    fn each_server_of_a_list_can_be_named_alone() {
        let url = PostgresUrl::parse(PAIR).unwrap();
        assert_eq!(
            url.only_host(1).unwrap().as_string(),
            "postgres://postgres:pw@10.0.0.2:5433/fleet?target_session_attrs=read-write"
        );
        assert!(url.only_host(2).is_none());
        assert_eq!(
            url.only_host(0)
                .unwrap()
                .without_option("target_session_attrs")
                .as_string(),
            "postgres://postgres:pw@10.0.0.1:5432/fleet"
        );
        let two = PostgresUrl::parse(
            "postgres://h1,h2/f?sslmode=require&target_session_attrs=read-write&application_name=x",
        )
        .unwrap();
        assert_eq!(
            two.without_option("target_session_attrs").as_string(),
            "postgres://h1,h2/f?sslmode=require&application_name=x"
        );
    }

    #[test]
    fn sqlx_is_given_only_the_options_it_reads() {
        let url = PostgresUrl::parse(
            "postgres://u:pw@h1,h2/f?sslmode=require&connect_timeout=5&keepalives_idle=30&target_session_attrs=read-write&application_name=x&tcp_user_timeout=40",
        )
        .unwrap();
        assert_eq!(
            url.for_sqlx().as_string(),
            "postgres://u:pw@h1,h2/f?sslmode=require&application_name=x"
        );
        let bare = PostgresUrl::parse("postgres://u@h/f?connect_timeout=5").unwrap();
        assert_eq!(bare.for_sqlx().as_string(), "postgres://u@h/f");
    }

    #[test]
    fn hosts_without_ports_names_and_ipv6_addresses_are_read() {
        for raw in [
            "postgresql://db1,db2/fleet",
            "postgres://u@[::1]:5432,[::2]:5433/fleet",
            "postgres://u@db-a.internal:5432,db-b.internal/fleet?sslmode=require",
            "postgres://u@h:1,h:2,h:3",
        ] {
            let url = PostgresUrl::parse(raw).unwrap_or_else(|e| panic!("{raw}: {e}"));
            assert_eq!(url.as_string(), raw);
        }
        assert_eq!(
            PostgresUrl::parse("postgres://u@h:1,h:2")
                .unwrap()
                .database(),
            None
        );
    }

    #[test]
    fn a_database_name_is_read_with_its_escapes_decoded() {
        let name = |raw: &str| PostgresUrl::parse(raw).unwrap().database_name();
        assert_eq!(
            name("postgres://h/fleet").unwrap().as_deref(),
            Some("fleet")
        );
        assert_eq!(
            name("postgres://h/fleet%2Dx%2dy?sslmode=require")
                .unwrap()
                .as_deref(),
            Some("fleet-x-y")
        );
        assert_eq!(
            name("postgres://h/caf%C3%A9").unwrap().as_deref(),
            Some("café")
        );
        assert_eq!(name("postgres://h:1,h:2").unwrap(), None);
        for bad in ["postgres://h/a%2", "postgres://h/a%zz", "postgres://h/a%FF"] {
            assert!(name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn empty_or_malformed_hosts_are_refused() {
        for bad in [
            "postgres:///fleet",
            "postgres://u@/fleet",
            "postgres://h1,/fleet",
            "postgres://,h2/fleet",
            "postgres://h1:port,h2/fleet",
            "postgres://h1:5432,h2:99999/fleet",
            "mysql://h1,h2/fleet",
            "h1,h2/fleet",
        ] {
            assert!(PostgresUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
