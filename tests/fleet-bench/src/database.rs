//! The bench's own database (dropped and recreated each run) and the Postgres counters it
//! reports. `pg_stat_database` is read over a connection to the `postgres` maintenance
//! database, so reading it adds nothing to the bench database's own counts.
//!
//! Postgres flushes a backend's statistics at most once a second while it is busy and up
//! to ten seconds later while it is idle, but always when the backend exits. The closing
//! figures are therefore read only once every connection to the bench database is gone
//! ([`BenchDb::wait_disconnected`]).

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;

use fleet_store::Store;
use tokio::time::{sleep, Instant};

use super::sql::BenchSql;

/// The `application_name` of the bench's own connections to the bench database, so its
/// polls and readings can be told apart from the fleet's work.
pub const BENCH_APP: &str = "fleet-bench";

const DISCONNECT_TIMEOUT: Duration = Duration::from_secs(15);
const DISCONNECT_POLL: Duration = Duration::from_millis(50);

pub struct BenchDb {
    pub name: String,
    pub url: String,
    /// When it was created: every operation a run makes is newer, and seeded history
    /// older (its newest row is an hour old), so a run's figures read only its own rows.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// On the `postgres` maintenance database.
    maintenance: BenchSql,
}

/// `url` with its database replaced by `name` (user, host, port and options kept).
pub fn url_with_database(url: &str, name: &str) -> anyhow::Result<String> {
    let mut u = reqwest::Url::parse(url)
        .map_err(|e| anyhow::anyhow!("--database-url is not a URL: {e}"))?;
    u.set_path(&format!("/{name}"));
    Ok(u.to_string())
}

/// Counters of the bench database from `pg_stat_database`, and two cluster-wide ones.
///
/// `xact_commit` counts every transaction, read-only ones included, and with the
/// extended query protocol an unprepared statement is two of them (its Parse/Describe
/// round trip ends in a Sync, which Postgres counts as a committed transaction). Write
/// transactions are counted by the transaction ids assigned meanwhile (only a writing
/// transaction gets one): that counter is cluster-wide, so `other_db_xacts` says whether
/// another database was busy at the same time.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct PgCounters {
    pub xact_commit: i64,
    pub xact_rollback: i64,
    pub tup_inserted: i64,
    pub tup_updated: i64,
    pub tup_deleted: i64,
    /// Transaction ids assigned (cluster-wide): write transactions.
    pub xids_assigned: i64,
    /// Transactions committed in every other database of the cluster.
    pub other_db_xacts: i64,
    /// WAL written (cluster-wide, `pg_stat_wal`): records, full-page images and bytes. A
    /// page's first change after a checkpoint begins writes the whole page, so these tell
    /// a window that ran behind a checkpoint from one that did not.
    pub wal_records: i64,
    pub wal_fpi: i64,
    pub wal_bytes: i64,
    /// Times WAL was flushed to disk (`wal_sync`): commits that shared no flush.
    pub wal_syncs: i64,
    /// Checkpoints begun (timed or requested) and the buffers they wrote
    /// (`pg_stat_bgwriter`).
    pub checkpoints: i64,
    pub checkpoint_buffers: i64,
}

impl PgCounters {
    pub fn since(&self, before: &PgCounters) -> PgCounters {
        PgCounters {
            xact_commit: self.xact_commit - before.xact_commit,
            xact_rollback: self.xact_rollback - before.xact_rollback,
            tup_inserted: self.tup_inserted - before.tup_inserted,
            tup_updated: self.tup_updated - before.tup_updated,
            tup_deleted: self.tup_deleted - before.tup_deleted,
            xids_assigned: self.xids_assigned - before.xids_assigned,
            other_db_xacts: self.other_db_xacts - before.other_db_xacts,
            wal_records: self.wal_records - before.wal_records,
            wal_fpi: self.wal_fpi - before.wal_fpi,
            wal_bytes: self.wal_bytes - before.wal_bytes,
            wal_syncs: self.wal_syncs - before.wal_syncs,
            checkpoints: self.checkpoints - before.checkpoints,
            checkpoint_buffers: self.checkpoint_buffers - before.checkpoint_buffers,
        }
    }
}

/// Calls per statement (by queryid) in the bench database, from `pg_stat_statements`.
#[derive(Debug, Clone, Default)]
pub struct Statements {
    pub calls: HashMap<i64, (i64, String)>,
}

/// Marks the bench's own statements in the bench database (polls, readings), so that
/// pg_stat_statements deltas leave them out.
pub const BENCH_SQL_TAG: &str = "/* fleet-bench */";

const STATEMENTS_SQL: &str = "SELECT /* fleet-bench */ queryid, calls, left(regexp_replace(query, '\\s+', ' ', 'g'), 160)
     FROM pg_stat_statements
     WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND queryid IS NOT NULL";

impl Statements {
    /// Calls since `before`, without the bench's own statements; most called first.
    pub fn since(&self, before: &Statements) -> Vec<(i64, String)> {
        let mut out: Vec<(i64, String)> = self
            .calls
            .iter()
            .filter(|(_, (_, q))| !q.contains(BENCH_SQL_TAG))
            .map(|(id, (calls, q))| {
                (
                    calls - before.calls.get(id).map_or(0, |(c, _)| *c),
                    q.clone(),
                )
            })
            .filter(|(calls, _)| *calls > 0)
            .collect();
        out.sort_by_key(|(calls, _)| std::cmp::Reverse(*calls));
        out
    }
}

impl BenchDb {
    /// Drops the bench database if it exists, creates it and applies the migrations: this
    /// fleetctl's own, or those of the `fleetctl` given (another revision's binaries run
    /// on the schema they were built with).
    pub async fn recreate(
        server_url: &str,
        name: &str,
        migrator: Option<&Path>,
    ) -> anyhow::Result<BenchDb> {
        let url = url_with_database(server_url, name)?;
        let maintenance = BenchSql::connect(&url_with_database(server_url, "postgres")?, 1)?;
        fleet_store::drop_database(&url).await?;
        fleet_store::create_database_if_missing(&url).await?;
        match migrator {
            None => fleet_store::migrate(&url).await?,
            Some(fleetctl) => {
                let status = tokio::process::Command::new(fleetctl)
                    .arg("migrate")
                    .env("DATABASE_URL", &url)
                    .stdout(std::process::Stdio::null())
                    .status()
                    .await
                    .with_context(|| format!("running {} migrate", fleetctl.display()))?;
                anyhow::ensure!(
                    status.success(),
                    "{} migrate failed ({status})",
                    fleetctl.display()
                );
            }
        }
        // The pipeline's approver approves as a principal, as people do: the database
        // counts approvals only by live approvers granted the operation's tenant.
        let sql = BenchSql::connect(&url, 1)?;
        let client = sql.client().await?;
        client
            .execute(
                "INSERT INTO principals (name, role) VALUES ($1, 'approver') ON CONFLICT DO NOTHING",
                &[&super::load::APPROVER],
            )
            .await?;
        client
            .execute(
                "INSERT INTO principal_tenants (principal, tenant_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&super::load::APPROVER, &super::load::TENANT],
            )
            .await?;
        Ok(BenchDb {
            name: name.to_owned(),
            url,
            created_at: chrono::Utc::now(),
            maintenance,
        })
    }

    /// A store on the bench database for what the bench does as the fleet would (prepare,
    /// approve), its connections named [`BENCH_APP`].
    pub fn store(&self, max_size: usize) -> anyhow::Result<Store> {
        Ok(Store::connect_as(&self.url, max_size, BENCH_APP)?)
    }

    /// The bench's own connections to the bench database, for its own SQL.
    pub fn sql(&self, max_size: usize) -> anyhow::Result<BenchSql> {
        BenchSql::connect(&self.url, max_size)
    }

    /// The Postgres processes working for the fleet now: the backends connected to the
    /// bench database, except the bench's own, and the server's background processes
    /// (WAL writer, checkpointer, background writer, autovacuum launcher), which every
    /// database shares.
    /// The Postgres processes working for the fleet, each with what it works for: the
    /// component whose role it logged in as (`execute` for `<prefix>__execute`: the
    /// component's name at the end, since a derived prefix may hold `__` itself), or its
    /// background type (`checkpointer`, `walwriter`, …).
    pub async fn fleet_backends(&self) -> anyhow::Result<HashMap<u32, String>> {
        let components: Vec<&str> = fleet_store::DbRole::ALL
            .iter()
            .map(|r| r.component())
            .collect();
        let component_at_end = format!("__({})$", components.join("|"));
        let rows = self
            .maintenance
            .client()
            .await?
            .query(
                "SELECT pid, CASE WHEN datname IS NULL THEN backend_type
                                  ELSE coalesce(nullif(substring(usename FROM $3), ''), usename) END
                 FROM pg_stat_activity
                 WHERE (datname = $1 AND application_name <> $2) OR (datname IS NULL AND backend_type <> 'client backend')",
                &[&self.name, &BENCH_APP, &component_at_end],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| {
                (
                    r.get::<_, i32>(0).unsigned_abs(),
                    r.get::<_, Option<String>>(1).unwrap_or_default(),
                )
            })
            .collect())
    }

    pub async fn drop(&self) -> anyhow::Result<()> {
        fleet_store::drop_database(&self.url).await?;
        Ok(())
    }

    pub async fn counters(&self) -> anyhow::Result<PgCounters> {
        let client = self.maintenance.client().await?;
        let r = client
            .query_one(
                "SELECT d.xact_commit, d.xact_rollback, d.tup_inserted, d.tup_updated, d.tup_deleted,
                        pg_snapshot_xmax(pg_current_snapshot())::text::int8,
                        (SELECT COALESCE(sum(o.xact_commit), 0)::int8 FROM pg_stat_database o
                         WHERE o.datname IS DISTINCT FROM $1 AND o.datname <> current_database()),
                        w.wal_records, w.wal_fpi, w.wal_bytes::int8, w.wal_sync,
                        b.checkpoints_timed + b.checkpoints_req, b.buffers_checkpoint
                 FROM pg_stat_database d, pg_stat_wal w, pg_stat_bgwriter b WHERE d.datname = $1",
                &[&self.name],
            )
            .await?;
        Ok(PgCounters {
            xact_commit: r.get(0),
            xact_rollback: r.get(1),
            tup_inserted: r.get(2),
            tup_updated: r.get(3),
            tup_deleted: r.get(4),
            xids_assigned: r.get(5),
            other_db_xacts: r.get(6),
            wal_records: r.get(7),
            wal_fpi: r.get(8),
            wal_bytes: r.get(9),
            wal_syncs: r.get(10),
            checkpoints: r.get(11),
            checkpoint_buffers: r.get(12),
        })
    }

    /// Waits until no backend is connected to the bench database, so every backend has
    /// flushed its statistics. `false` after [`DISCONNECT_TIMEOUT`].
    pub async fn wait_disconnected(&self) -> anyhow::Result<bool> {
        let deadline = Instant::now() + DISCONNECT_TIMEOUT;
        loop {
            let client = self.maintenance.client().await?;
            let n: i64 = client
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = $1",
                    &[&self.name],
                )
                .await?
                .get(0);
            drop(client);
            if n == 0 {
                return Ok(true);
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            sleep(DISCONNECT_POLL).await;
        }
    }

    /// `names` as the server has them, `<setting><unit>` (e.g. `16384 8kB`).
    pub async fn server_settings(
        &self,
        names: &[&str],
    ) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let rows = self
            .maintenance
            .client()
            .await?
            .query(
                "SELECT name, setting || COALESCE(' ' || unit, '') FROM pg_settings WHERE name = ANY($1)",
                &[&names],
            )
            .await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    pub async fn server_version(&self) -> anyhow::Result<String> {
        Ok(self
            .maintenance
            .client()
            .await?
            .query_one("SHOW server_version", &[])
            .await?
            .get(0))
    }

    /// `Ok(())` when pg_stat_statements can be read in the bench database (the extension
    /// is created there); otherwise why not, and how to enable it.
    pub async fn statements_available(
        &self,
        bench: &BenchSql,
    ) -> anyhow::Result<Result<(), String>> {
        let preload: String = self
            .maintenance
            .client()
            .await?
            .query_one("SHOW shared_preload_libraries", &[])
            .await?
            .get(0);
        if !preload.split(',').any(|l| l.trim() == "pg_stat_statements") {
            return Ok(Err(format!(
                "n/a: pg_stat_statements is not in shared_preload_libraries ({:?}); enable it with \
                 ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements' and a Postgres restart",
                preload
            )));
        }
        let client = bench.client().await?;
        if let Err(e) = client
            .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            .await
        {
            return Ok(Err(format!(
                "n/a: CREATE EXTENSION pg_stat_statements failed: {e}"
            )));
        }
        Ok(
            match client
                .query_opt("SELECT 1 FROM pg_stat_statements LIMIT 1", &[])
                .await
            {
                Ok(_) => Ok(()),
                Err(e) => Err(format!("n/a: pg_stat_statements cannot be read: {e}")),
            },
        )
    }
}

/// One reading of pg_stat_statements over `bench` (one statement, one transaction in the
/// bench database).
pub async fn statements(bench: &BenchSql) -> anyhow::Result<Statements> {
    let client = bench.client().await?;
    let rows = client.query(STATEMENTS_SQL, &[]).await?;
    let mut calls = HashMap::new();
    for r in rows {
        let id: i64 = r.get(0);
        let n: i64 = r.get(1);
        let q: String = r.get(2);
        // The same queryid may appear once per user; add them up.
        let e = calls.entry(id).or_insert((0, q));
        e.0 += n;
    }
    Ok(Statements { calls })
}
