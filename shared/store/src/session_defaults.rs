//! The defaults the fleet gives its own Postgres connections, so that a server that stops
//! answering costs seconds rather than the operating system's minutes.
//!
//! A primary that dies with its machine, freezes (a stalled VM, a process stopped), or sits
//! behind a network that drops packets closes none of its connections: without bounds of
//! the client's own, a pooled connection waits for an answer that never comes, a new one
//! waits on the first server of the URL and never asks the promoted standby, and a worker
//! holding either stands still. Each default below applies only where `DATABASE_URL` says
//! nothing about it: whatever the URL sets wins (docs/scaling.md has each one and why).

use std::time::Duration;

use tokio_postgres::config::TargetSessionAttrs;
use tokio_postgres::Config;

/// How long one server of the URL gets to accept a connection, finish the startup and
/// say whether it takes writes (libpq's `connect_timeout` bounds the same whole; the
/// fleet's connector applies it per server, tokio-postgres's bounds only the TCP connect).
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// An idle connection is probed after this long without traffic...
const KEEPALIVES_IDLE: Duration = Duration::from_secs(5);
/// ...every this long...
const KEEPALIVES_INTERVAL: Duration = Duration::from_secs(2);
/// ...and closed after this many probes went unanswered (the kernel's bound for a peer
/// that vanished while the connection was idle: 5 + 2 × 3 = 11 s).
const KEEPALIVES_RETRIES: u32 = 3;
/// Data sent and not acknowledged for this long closes the connection (the kernel's bound
/// for a peer that vanished while a request was on its way).
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(10);
/// What the server lets one statement run. Every statement of the store is answered by an
/// index in milliseconds; one that runs this long is stuck behind a lock or a server in
/// trouble, and its caller treats the error as transient.
const STATEMENT_TIMEOUT: &str = "10s";
/// What the server lets a session sit inside a transaction without sending anything: a
/// client that vanished mid-transaction (its machine gone, a partition) releases its row
/// locks after this long instead of holding them until TCP notices.
const IDLE_IN_TRANSACTION_TIMEOUT: &str = "15s";
/// How much longer than the statement timeout the client waits for a server's reply
/// before it declares the connection dead: the server answers a statement it cancelled
/// with an error, so a silence this long means the server (or the path to it) is gone.
const REPLY_MARGIN: Duration = Duration::from_secs(5);

/// The connection settings the fleet's pools use, and the client's own bound on a reply.
pub(crate) struct Tuned {
    pub config: Config,
    /// How long a connection may wait for a server's reply to a request it sent; `None`
    /// when the statement timeout is off (the URL's `options` turned it off).
    pub reply_timeout: Option<Duration>,
}

/// `config` (parsed from `database_url`) with the fleet's defaults for everything the URL
/// does not set: the session timeouts go before the URL's own `options` (a later `-c`
/// wins, so the URL's do), the settings the store's statements depend on (`forced`)
/// after them.
pub(crate) fn tune(database_url: &str, mut config: Config, forced: &str) -> Tuned {
    let given = given_parameters(database_url);
    let set = |name: &str| given.iter().any(|g| g == name);
    if !set("connect_timeout") {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if !set("keepalives") {
        config.keepalives(true);
    }
    if !set("keepalives_idle") {
        config.keepalives_idle(KEEPALIVES_IDLE);
    }
    if !set("keepalives_interval") {
        config.keepalives_interval(KEEPALIVES_INTERVAL);
    }
    if !set("keepalives_retries") {
        config.keepalives_retries(KEEPALIVES_RETRIES);
    }
    if !set("tcp_user_timeout") {
        config.tcp_user_timeout(TCP_USER_TIMEOUT);
    }
    // Several servers are named so that the client finds the one that takes writes; every
    // session of the fleet writes.
    if !set("target_session_attrs") && config.get_hosts().len() > 1 {
        config.target_session_attrs(TargetSessionAttrs::ReadWrite);
    }
    let options = [
        format!(
            "-c statement_timeout={STATEMENT_TIMEOUT} -c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_TIMEOUT}"
        ),
        config.get_options().unwrap_or_default().to_owned(),
        forced.to_owned(),
    ]
    .into_iter()
    .filter(|o| !o.is_empty())
    .collect::<Vec<_>>()
    .join(" ");
    let reply_timeout = match last_setting(&options, "statement_timeout") {
        Some(value) => duration_setting(&value).filter(|d| !d.is_zero()),
        None => None,
    }
    .map(|statement| statement + REPLY_MARGIN);
    config.options(options);
    Tuned {
        config,
        reply_timeout,
    }
}

/// The names of the parameters `database_url` sets itself: the query of a `postgres://`
/// URL, or the keys of a `key=value` connection string.
pub(crate) fn given_parameters(database_url: &str) -> Vec<String> {
    let trimmed = database_url.trim_start();
    if trimmed.starts_with("postgres://") || trimmed.starts_with("postgresql://") {
        let query = trimmed
            .split_once('?')
            .map_or("", |(_, q)| q.split('#').next().unwrap_or(""));
        return query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| p.split('=').next().unwrap_or(p).to_owned())
            .collect();
    }
    key_values(trimmed).into_iter().map(|(k, _)| k).collect()
}

/// The `key=value` pairs of a libpq connection string (values may be single-quoted, with
/// `\'` and `\\` escaped inside).
fn key_values(s: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c);
            chars.next();
        }
        if key.is_empty() {
            return pairs;
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next_if_eq(&'=').is_none() {
            return pairs;
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '\'' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                value.push(c);
            }
        }
        pairs.push((key, value));
    }
}

/// The value the last `-c name=value` (or `--name=value`) of `options` gives `name`, as
/// the server reads them (a later one wins; `-` and `_` are the same in a name).
fn last_setting(options: &str, name: &str) -> Option<String> {
    let mut tokens = options.split_whitespace();
    let mut last = None;
    while let Some(token) = tokens.next() {
        let assignment = if token == "-c" {
            tokens.next()
        } else {
            token
                .strip_prefix("-c")
                .or_else(|| token.strip_prefix("--"))
        };
        let Some((key, value)) = assignment.and_then(|a| a.split_once('=')) else {
            continue;
        };
        if key.replace('-', "_") == name {
            last = Some(value.to_owned());
        }
    }
    last
}

/// A Postgres time setting (`10s`, `1500`, `2min`, `500ms`; milliseconds without a
/// unit), or `None` when it cannot be read.
fn duration_setting(value: &str) -> Option<Duration> {
    let value = value.trim();
    let split = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let number: f64 = number.parse().ok()?;
    let ms_per_unit = match unit.trim() {
        "" | "ms" => 1.0,
        "us" => 0.001,
        "s" => 1_000.0,
        "min" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        _ => return None,
    };
    let ms = number * ms_per_unit;
    (ms.is_finite() && ms >= 0.0).then(|| Duration::from_secs_f64(ms / 1_000.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuned(url: &str) -> Tuned {
        tune(url, url.parse().unwrap(), "-c jit=off")
    }

    #[test]
    fn every_default_applies_where_the_url_is_silent() {
        let t = tuned("postgres://fleet@db1:5432,db2:5432/fleet");
        let c = &t.config;
        assert_eq!(c.get_connect_timeout(), Some(&CONNECT_TIMEOUT));
        assert!(c.get_keepalives());
        assert_eq!(c.get_keepalives_idle(), KEEPALIVES_IDLE);
        assert_eq!(c.get_keepalives_interval(), Some(KEEPALIVES_INTERVAL));
        assert_eq!(c.get_keepalives_retries(), Some(KEEPALIVES_RETRIES));
        assert_eq!(c.get_tcp_user_timeout(), Some(&TCP_USER_TIMEOUT));
        assert_eq!(c.get_target_session_attrs(), TargetSessionAttrs::ReadWrite);
        assert_eq!(
            c.get_options(),
            Some("-c statement_timeout=10s -c idle_in_transaction_session_timeout=15s -c jit=off")
        );
        assert_eq!(t.reply_timeout, Some(Duration::from_secs(15)));
        // One server: nothing to choose between.
        let one = tuned("postgres://fleet@db1/fleet");
        assert_eq!(
            one.config.get_target_session_attrs(),
            TargetSessionAttrs::Any
        );
    }

    #[test]
    fn what_the_url_sets_wins() {
        let t = tuned(
            "postgres://fleet@db1,db2/fleet?connect_timeout=9&keepalives_idle=30&keepalives_interval=7&keepalives_retries=1&tcp_user_timeout=40&target_session_attrs=any&options=-c%20statement_timeout%3D1min",
        );
        let c = &t.config;
        assert_eq!(c.get_connect_timeout(), Some(&Duration::from_secs(9)));
        assert_eq!(c.get_keepalives_idle(), Duration::from_secs(30));
        assert_eq!(c.get_keepalives_interval(), Some(Duration::from_secs(7)));
        assert_eq!(c.get_keepalives_retries(), Some(1));
        assert_eq!(c.get_tcp_user_timeout(), Some(&Duration::from_secs(40)));
        assert_eq!(c.get_target_session_attrs(), TargetSessionAttrs::Any);
        // The URL's statement timeout comes after the default, so the server keeps it,
        // and the client waits a reply that much longer.
        assert_eq!(
            c.get_options(),
            Some("-c statement_timeout=10s -c idle_in_transaction_session_timeout=15s -c statement_timeout=1min -c jit=off")
        );
        assert_eq!(t.reply_timeout, Some(Duration::from_secs(65)));
        let off = tuned("postgres://db1/f?options=--statement-timeout%3D0");
        assert_eq!(off.reply_timeout, None);
        let kv = tuned("host=db1,db2 dbname=f keepalives=0 options='-c statement_timeout=2500'");
        assert!(!kv.config.get_keepalives());
        assert_eq!(kv.reply_timeout, Some(Duration::from_millis(7_500)));
    }

    #[test]
    fn parameters_and_settings_are_read_as_postgres_reads_them() {
        assert_eq!(
            given_parameters("postgresql://u@h/db?sslmode=disable&tcp_user_timeout=3#x"),
            ["sslmode", "tcp_user_timeout"]
        );
        assert_eq!(
            given_parameters("host=a port = 5 options='-c a=\\'b c\\'' user=x"),
            ["host", "port", "options", "user"]
        );
        assert!(given_parameters("postgres://h/db").is_empty());
        for (value, ms) in [
            ("10s", 10_000),
            ("2500", 2_500),
            ("1.5s", 1_500),
            ("2min", 120_000),
            ("250ms", 250),
        ] {
            assert_eq!(
                duration_setting(value),
                Some(Duration::from_millis(ms)),
                "{value}"
            );
        }
        assert_eq!(duration_setting("soon"), None);
        assert_eq!(
            last_setting(
                "-cstatement_timeout=1 --statement-timeout=2 -c x=3",
                "statement_timeout"
            )
            .as_deref(),
            Some("2")
        );
    }
}
