//! The registry of named readiness checks behind `/readyz`.
//!
//! A worker registers what it needs to do useful work: a cheap synchronous check (the
//! broker consumer's "connected" flag) or an async one with its own timeout (a Postgres
//! pool checkout). `/readyz` runs every check, concurrently, on each request, and reports
//! the names of those that failed, each with its cause where the check gives one ("not
//! ready: postgres" alone would send an operator to the logs). A check that overruns its
//! timeout has failed.
//!
//! Cloning a `Readiness` is cheap and every clone sees the same registry, so checks can be
//! added after the admin server has started (a worker registers "broker" once its
//! consumer exists).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

/// A synchronous check: must not block (read an atomic, not a socket).
pub type SyncCheck = Arc<dyn Fn() -> bool + Send + Sync>;

type BoxedOutcome = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;
type AsyncCheck = Arc<dyn Fn() -> BoxedOutcome + Send + Sync>;

#[derive(Clone)]
enum Check {
    Sync(SyncCheck),
    Async {
        check: AsyncCheck,
        timeout: Duration,
    },
}

impl Check {
    /// `Ok`, or why not (empty when the check gives no cause).
    async fn outcome(self) -> Result<(), String> {
        match self {
            Check::Sync(check) => passed(check()),
            Check::Async { check, timeout } => tokio::time::timeout(timeout, check())
                .await
                .unwrap_or_else(|_| Err(format!("no answer within {} ms", timeout.as_millis()))),
        }
    }
}

/// A check that gives no cause: failed, with nothing to say.
fn passed(ok: bool) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(String::new())
    }
}

/// Named readiness checks. With no check registered the process is ready.
#[derive(Clone, Default)]
pub struct Readiness {
    checks: Arc<RwLock<Vec<(String, Check)>>>,
}

/// The result of one evaluation: the names of the checks that failed, in registration
/// order, and the cause each gave (empty when it gave none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadinessReport {
    pub failed: Vec<String>,
    pub causes: Vec<String>,
}

impl ReadinessReport {
    pub fn is_ready(&self) -> bool {
        self.failed.is_empty()
    }

    /// `postgres (database "x" does not exist …), broker`: each failed check, with its
    /// cause where it gave one.
    pub fn describe(&self) -> String {
        self.failed
            .iter()
            .zip(&self.causes)
            .map(|(name, cause)| match cause.is_empty() {
                true => name.clone(),
                false => format!("{name} ({cause})"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Readiness {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a synchronous check. A name registered again replaces the earlier check.
    pub fn add(&self, name: impl Into<String>, check: SyncCheck) {
        self.insert(name.into(), Check::Sync(check));
    }

    /// Registers a flag: ready while it is `true` (e.g. "broker", set by the consumer loop).
    pub fn add_flag(&self, name: impl Into<String>, flag: Arc<AtomicBool>) {
        self.add(name, Arc::new(move || flag.load(Ordering::Acquire)));
    }

    /// Registers an async check that fails if it returns `false` or takes longer than
    /// `timeout`, e.g. `readiness.add_async("postgres", Duration::from_millis(500), move ||
    /// { let pool = pool.clone(); async move { pool.get().await.is_ok() } })`.
    pub fn add_async<F, Fut>(&self, name: impl Into<String>, timeout: Duration, check: F)
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        let check = Arc::new(check);
        self.add_async_explained(name, timeout, move || {
            let passes = check();
            async move { passed(passes.await) }
        });
    }

    /// As [`add_async`](Self::add_async), for a check that says why it failed: its
    /// `Err` is shown on `/readyz` beside its name (say nothing secret in it).
    pub fn add_async_explained<F, Fut>(&self, name: impl Into<String>, timeout: Duration, check: F)
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        let check: AsyncCheck = Arc::new(move || Box::pin(check()));
        self.insert(name.into(), Check::Async { check, timeout });
    }

    /// Runs every check concurrently; the total time is bounded by the slowest timeout.
    pub async fn evaluate(&self) -> ReadinessReport {
        // Clone out of the lock: a check must never run while the lock is held.
        let checks = self
            .checks
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let results = futures_util::future::join_all(
            checks
                .into_iter()
                .map(|(name, check)| async move { (name, check.outcome().await) }),
        )
        .await;
        let (failed, causes) = results
            .into_iter()
            .filter_map(|(name, outcome)| Some((name, outcome.err()?)))
            .unzip();
        ReadinessReport { failed, causes }
    }

    pub fn names(&self) -> Vec<String> {
        let checks = self.checks.read().unwrap_or_else(PoisonError::into_inner);
        checks.iter().map(|(name, _)| name.clone()).collect()
    }

    fn insert(&self, name: String, check: Check) {
        let mut checks = self.checks.write().unwrap_or_else(PoisonError::into_inner);
        match checks.iter_mut().find(|(existing, _)| *existing == name) {
            Some(slot) => slot.1 = check,
            None => checks.push((name, check)),
        }
    }
}

impl fmt::Debug for Readiness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Readiness")
            .field("checks", &self.names())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn no_checks_means_ready() {
        assert!(Readiness::new().evaluate().await.is_ready());
    }

    #[tokio::test]
    async fn reports_the_failing_checks_by_name() {
        let readiness = Readiness::new();
        let broker = Arc::new(AtomicBool::new(false));
        readiness.add_flag("broker", broker.clone());
        readiness.add_async("postgres", Duration::from_secs(1), || async { true });
        readiness.add("disk", Arc::new(|| false));
        assert_eq!(
            readiness.evaluate().await.failed,
            vec!["broker".to_owned(), "disk".to_owned()]
        );

        broker.store(true, Ordering::Release);
        readiness.add("disk", Arc::new(|| true));
        assert!(readiness.evaluate().await.is_ready());
        assert_eq!(readiness.names(), vec!["broker", "postgres", "disk"]);
    }

    #[tokio::test]
    async fn an_async_check_that_hangs_fails_after_its_timeout() {
        let readiness = Readiness::new();
        readiness.add_async(
            "postgres",
            Duration::from_millis(50),
            std::future::pending::<bool>,
        );
        let report = readiness.evaluate().await;
        assert_eq!(report.failed, vec!["postgres".to_owned()]);
        assert_eq!(report.describe(), "postgres (no answer within 50 ms)");
    }

    #[tokio::test]
    async fn a_check_that_says_why_is_reported_with_its_cause() {
        let readiness = Readiness::new();
        readiness.add_async_explained("postgres", Duration::from_secs(1), || async {
            Err("database \"x\" does not exist".to_owned())
        });
        readiness.add("broker", Arc::new(|| false));
        let report = readiness.evaluate().await;
        assert_eq!(
            report.describe(),
            "postgres (database \"x\" does not exist), broker"
        );
    }
}
