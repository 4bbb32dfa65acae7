//! The relay's own settings (flags with env), on top of the common ones.

use std::time::Duration;

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct RelaySettings {
    /// Events taken per round (at most one per operation, so that an operation's events
    /// go out one after the other); each round is one publish-and-confirm batch.
    #[arg(long, env = "RELAY_BATCH", default_value_t = 100, value_parser = clap::value_parser!(i64).range(1..=1_000))]
    pub relay_batch: i64,

    /// Wait between two looks at the outbox while nothing is waiting: the longest an
    /// event waits before its round starts. (Rounds follow each other without a pause
    /// while they find events.) An empty look is one indexed read of no rows.
    #[arg(long, env = "RELAY_POLL_INTERVAL_MS", default_value_t = 25,
          value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub relay_poll_interval_ms: u64,

    /// How long published events stay in the outbox (for inspection) before they are
    /// deleted; 0 deletes them at the next retention run.
    #[arg(long, env = "OUTBOX_RETENTION_S", default_value_t = 86_400,
          value_parser = clap::value_parser!(u64).range(0..=2_592_000))]
    pub outbox_retention_s: u64,

    /// Move every message of the work queues' dead-letter queues into Postgres, where
    /// `/v1/dead-letters` and `fleetctl dead-letters` show, replay and discard them. Off
    /// only where something else reads the dead-letter queues themselves.
    #[arg(long, env = "RELAY_KEEP_DEAD_LETTERS", default_value_t = true, action = clap::ArgAction::Set)]
    pub keep_dead_letters: bool,

    /// The approvers' channels file (TOML: per tenant, Slack-compatible webhooks and
    /// e-mail over SMTP; docs/notifications.md). Unset: nobody is notified. A file that
    /// cannot be read or is wrong stops the start, naming what is wrong.
    #[arg(long, env = "NOTIFY_CHANNELS_FILE")]
    pub notify_channels_file: Option<std::path::PathBuf>,

    /// How long before an approval expires the reminder goes out, if the operation still
    /// waits; 0: no reminders.
    #[arg(long, env = "NOTIFY_REMINDER_BEFORE_S", default_value_t = 900,
          value_parser = clap::value_parser!(u64).range(0..=604_800))]
    pub notify_reminder_before_s: u64,

    /// The console's public URL (the `API_PUBLIC_URL` of an API whose console is on):
    /// messages link to `<it>/console/operations/<id>`. Unset: no link.
    #[arg(long, env = "NOTIFY_CONSOLE_URL")]
    pub notify_console_url: Option<String>,

    /// How long a claimed notification is held while it is sent; a notifier that dies
    /// holding one leaves it to be sent again after this. Each send may take half of it.
    #[arg(long, env = "NOTIFY_LEASE_S", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(4..=3_600))]
    pub notify_lease_s: u64,
}

impl RelaySettings {
    pub fn poll_interval(&self) -> Duration {
        Duration::from_millis(self.relay_poll_interval_ms)
    }
}

impl Default for RelaySettings {
    fn default() -> Self {
        RelaySettings {
            relay_batch: 100,
            relay_poll_interval_ms: 25,
            outbox_retention_s: 86_400,
            keep_dead_letters: true,
            notify_channels_file: None,
            notify_reminder_before_s: 900,
            notify_console_url: None,
            notify_lease_s: 60,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        relay: RelaySettings,
    }

    #[test]
    fn defaults_match_and_bounds_are_enforced() {
        let cli = Cli::try_parse_from(["bin"]).unwrap();
        let d = RelaySettings::default();
        if std::env::var_os("RELAY_BATCH").is_none() {
            assert_eq!(cli.relay.relay_batch, d.relay_batch);
        }
        if std::env::var_os("RELAY_POLL_INTERVAL_MS").is_none() {
            assert_eq!(cli.relay.poll_interval(), d.poll_interval());
        }
        if std::env::var_os("OUTBOX_RETENTION_S").is_none() {
            assert_eq!(cli.relay.outbox_retention_s, d.outbox_retention_s);
        }
        if std::env::var_os("RELAY_KEEP_DEAD_LETTERS").is_none() {
            assert_eq!(cli.relay.keep_dead_letters, d.keep_dead_letters);
        }
        assert!(
            !Cli::try_parse_from(["bin", "--keep-dead-letters=false"])
                .unwrap()
                .relay
                .keep_dead_letters
        );
        assert!(Cli::try_parse_from(["bin", "--relay-batch=0"]).is_err());
        assert!(Cli::try_parse_from(["bin", "--relay-batch=1001"]).is_err());
        assert!(Cli::try_parse_from(["bin", "--relay-poll-interval-ms=5"]).is_err());
        assert!(Cli::try_parse_from(["bin", "--outbox-retention-s=2592001"]).is_err());
        assert_eq!(
            Cli::try_parse_from(["bin", "--outbox-retention-s=0"])
                .unwrap()
                .relay
                .outbox_retention_s,
            0
        );
    }
}
