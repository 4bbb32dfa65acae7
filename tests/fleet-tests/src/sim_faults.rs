//! The simulator's fault rules as a test reads and ends them (a test installs them with
//! [`TestFleet::sim_fault`]).

use crate::TestFleet;

impl TestFleet {
    /// How many more requests the simulator's fault rules will fail: the sum of the
    /// `times` left of every rule that counts them.
    pub async fn sim_faults_left(&self) -> u64 {
        let listed = self.sim_get("/_sim/faults").await;
        listed["data"].as_array().map_or(0, |rules| {
            rules.iter().filter_map(|r| r["times"].as_u64()).sum()
        })
    }

    /// Removes every fault rule: the simulator answers as it normally does again.
    pub async fn clear_sim_faults(&self) {
        let answer = self
            .http
            .delete(format!("{}/_sim/faults", self.sim.base_url))
            .send()
            .await
            .unwrap();
        assert!(answer.status().is_success(), "{}", answer.status());
    }
}
