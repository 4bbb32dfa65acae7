//! A worker that refuses to start on a bad setting: it exits failing, names the setting,
//! and never prints the value it was given (a key, a secret).

use crate::{eventually, WorkerProcess};

impl WorkerProcess {
    /// Waits until the process exits, then asserts it failed, that its log says `said`,
    /// and that the log holds nothing of `value`.
    pub async fn refuses_to_start(&mut self, said: &str, value: &str) {
        let status = eventually("the worker to exit", || {
            let exited = self.exited();
            async move { exited }
        })
        .await;
        assert!(!status.success());
        let log = self.log_text();
        assert!(log.contains(said), "{log}");
        assert!(!log.contains(value), "the value is not printed: {log}");
    }
}
