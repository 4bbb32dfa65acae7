//! Waiting for a batch of operations to succeed, counted in the database.

use std::time::Duration;

use crate::{eventually_within, TestFleet};

impl TestFleet {
    /// Waits (up to `within`) until `n` operations have succeeded.
    pub async fn all_succeed(&self, n: usize, within: Duration) {
        let n = i64::try_from(n).expect("a count");
        eventually_within(within, "every payment to succeed", || async {
            let succeeded = self
                .count("SELECT count(*) FROM operations WHERE status = 'succeeded'")
                .await;
            (succeeded == n).then_some(())
        })
        .await;
    }
}
