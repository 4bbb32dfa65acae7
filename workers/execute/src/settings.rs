//! execute's own settings (flags with env), on top of the common and provider ones.

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct ExecuteSettings {
    /// Lease on a claimed operation. Renewed every third of it while the provider call is
    /// in flight; a worker that cannot renew for two thirds of it abandons the call.
    #[arg(long, env = "LEASE_TTL_MS", default_value_t = 30_000, value_parser = clap::value_parser!(i64).range(1_000..=3_600_000))]
    pub lease_ttl_ms: i64,

    /// How long an asynchronously accepted operation may wait for its final answer before
    /// reconcile looks it up.
    #[arg(long, env = "ACCEPTED_DEADLINE_S", default_value_t = 3_600, value_parser = clap::value_parser!(u32).range(1..))]
    pub accepted_deadline_s: u32,

    /// Policy versions currently in force (comma-separated). An approved operation under
    /// another policy is cancelled. Empty: every version is accepted.
    #[arg(
        long,
        env = "POLICY_VERSIONS",
        value_delimiter = ',',
        default_value = ""
    )]
    pub policy_versions: Vec<String>,

    /// Sends of a request that provably never left (connection refused) within one claim,
    /// same key and body each time, before the claim is released.
    #[arg(long, env = "NOT_SENT_RETRIES", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=10))]
    pub not_sent_retries: u32,
}

impl ExecuteSettings {
    pub fn accepted_policies(&self) -> Vec<String> {
        self.policy_versions
            .iter()
            .filter(|p| !p.is_empty())
            .cloned()
            .collect()
    }
}

impl Default for ExecuteSettings {
    fn default() -> Self {
        Self {
            lease_ttl_ms: 30_000,
            accepted_deadline_s: 3_600,
            policy_versions: Vec::new(),
            not_sent_retries: 3,
        }
    }
}
