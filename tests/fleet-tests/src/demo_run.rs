//! What a `fleetctl demo` run printed about where it ran (its own database and broker
//! namespace), and their removal whatever the test's outcome: a demo run with `--keep`, or
//! one stopped before its own clean-up, must not leave them on the shared servers.

use fleet_broker::BrokerConfig;

use crate::{database_url_at, remove_namespace_and_database, sql_client, Infra};

/// A demo's database and namespace, removed when dropped (nothing happens for those the
/// demo already removed).
pub struct DemoRun {
    /// The database's name, as printed.
    pub database: String,
    /// Its URL on the shared server.
    pub database_url: String,
    /// The broker config of its namespace.
    pub broker: BrokerConfig,
}

/// The value printed after `label` on the first line of `stdout` that starts with it.
pub fn printed_after<'a>(stdout: &'a str, label: &str) -> Option<&'a str> {
    stdout.lines().find_map(|l| l.strip_prefix(label))
}

impl DemoRun {
    /// Reads the demo's `database: <url> (migrated)` and `broker namespace: <ns>` lines;
    /// `None` when the demo stopped before printing them (then it made neither).
    pub fn printed(stdout: &str, amqp_url: &str) -> Option<DemoRun> {
        let database = printed_after(stdout, "database: ")?
            .strip_suffix(" (migrated)")?
            .rsplit('/')
            .next()?
            .to_owned();
        let namespace = printed_after(stdout, "broker namespace: ")?;
        let mut broker = BrokerConfig::new(amqp_url).with_namespace(namespace);
        broker.connect_timeout_ms = 30_000;
        Some(DemoRun {
            database_url: database_url_at(&Infra::shared().database_base_url, &database),
            database,
            broker,
        })
    }

    /// A client of the demo's database (while it exists).
    pub async fn sql(&self) -> tokio_postgres::Client {
        sql_client(&self.database_url).await
    }
}

impl Drop for DemoRun {
    fn drop(&mut self) {
        remove_namespace_and_database(&self.broker, &self.database_url);
    }
}
