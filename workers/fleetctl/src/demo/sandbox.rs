//! Where a demo runs: a database and a broker namespace of its own, named afresh for each
//! run on the servers the caller's `DATABASE_URL` and `AMQP_URL` name, and removed at the
//! end unless `--keep` asks otherwise.
//!
//! Why: the demo publishes to `intents.prepare` and reads its operations back from the
//! database. On a broker where another fleet consumes the default queues (a compose stack,
//! a second terminal) that fleet would take half the demo's intents into its own database,
//! and the demo would wait for operations that never arrive. Names of its own cannot
//! collide with anyone's, and the demo's leftovers cannot pile up on a shared server.

use fleet_runtime::RedactedUrl;
use fleet_store::PostgresUrl;

use crate::args::Connection;

/// The demo's own database and namespace, derived from the caller's connection.
pub struct Sandbox {
    /// The caller's connection with the database and the namespace replaced.
    pub conn: Connection,
    keep: bool,
}

impl Sandbox {
    /// Names a database `<caller's database>_demo_<run>` on the same servers and a
    /// namespace `demo-<run>` (inside the caller's namespace, if it has one), creates and
    /// migrates the database, and prints both.
    pub async fn create(caller: &Connection, keep: bool) -> anyhow::Result<Sandbox> {
        // A fixed role prefix would give the demo's database the caller's deployment's
        // role names, which belong to the caller's database.
        anyhow::ensure!(
            std::env::var_os(fleet_store::ROLE_PREFIX_SETTING).is_none_or(|p| p.is_empty()),
            "the demo makes a database of its own, whose roles take their prefix from its name: unset {}",
            fleet_store::ROLE_PREFIX_SETTING
        );
        let run = run_id();
        let url = PostgresUrl::parse(caller.db.database_url.expose())?;
        let base = url.database_name()?.unwrap_or_else(|| "fleet".to_owned());
        let database = format!(
            "{}_demo_{run}",
            base.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
        );
        let mut conn = caller.clone();
        conn.db.database_url = RedactedUrl::new(url.with_database(&database).as_string());
        conn.amqp.amqp_namespace = namespace_in(&caller.amqp.amqp_namespace, &run);
        let sandbox = Sandbox { conn, keep };
        let db = sandbox.conn.db.database_url.expose();
        fleet_store::create_database_if_missing(db).await?;
        fleet_store::migrate(db).await?;
        println!("database: {} (migrated)", sandbox.conn.db.database_url);
        println!("broker namespace: {}", sandbox.conn.amqp.amqp_namespace);
        Ok(sandbox)
    }

    /// Removes the database (and its deployment's roles) and every queue and exchange of
    /// the namespace, unless asked to keep them; says which.
    pub async fn finish(self) {
        let (db, ns) = (&self.conn.db.database_url, &self.conn.amqp.amqp_namespace);
        if self.keep {
            println!("kept database {db} and broker namespace {ns}");
            return;
        }
        fleet_broker::delete_namespace(&self.conn.broker()).await;
        match fleet_store::drop_database(db.expose()).await {
            Ok(()) => println!("removed database {db} and broker namespace {ns}"),
            Err(err) => eprintln!("database {db} was not removed: {err}"),
        }
    }
}

/// Ten lowercase characters of a fresh ULID's random part: unique enough for a machine's
/// demos, and short enough that a database name built on a test's long one stays within
/// Postgres' 63 bytes.
fn run_id() -> String {
    let ulid = ulid::Ulid::new().to_string().to_lowercase();
    ulid[ulid.len() - 10..].to_owned()
}

/// `demo-<run>`, or `<caller's>.demo-<run>` when the caller already works in a namespace.
fn namespace_in(caller: &str, run: &str) -> String {
    match caller {
        "" => format!("demo-{run}"),
        ns => format!("{ns}.demo-{run}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_namespace_nests_in_the_callers() {
        assert_eq!(namespace_in("", "abc"), "demo-abc");
        assert_eq!(namespace_in("t1", "abc"), "t1.demo-abc");
    }

    #[test]
    fn run_ids_differ_and_are_short() {
        let (a, b) = (run_id(), run_id());
        assert_ne!(a, b);
        assert_eq!(a.len(), 10);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()));
    }
}
