//! fleet-relay: publishes outcome events. The database writes an outbox row in the same
//! transaction as every change that matters to an agent or a person; this worker takes
//! them in order, publishes each as a CloudEvent (structured JSON) to the `fleet.events`
//! topic exchange with a publisher confirm, and only then marks it published. A crash or
//! a broker outage between the two leaves the row to be published again: at least once,
//! with the same event id, and in sequence order per operation (see `fleet_store`'s
//! outbox module for why several replicas keep that order).
//!
//! It looks at the outbox again as soon as a round published everything it took, and
//! otherwise every `RELAY_POLL_INTERVAL_MS`. The database does not notify it: a
//! notification would take a cluster-wide lock at the commit of every transaction that
//! writes an event, and those commits would then flush one after the other.

mod dead_letters;
mod gauges;
mod keep_dead_letters;
mod notify;
mod pause;
mod retention;
mod round;
mod series;
mod settings;

use std::time::Duration;

use fleet_broker::Publisher;
use fleet_store::RelayStore;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

pub use notify::{Channels, Notifier};
use round::Round;
pub use settings::RelaySettings;

pub struct RelayDeps {
    pub store: RelayStore,
    pub publisher: Publisher,
    /// The broker namespace, named in every event's `source`.
    pub namespace: String,
    pub settings: RelaySettings,
    /// The approvers' notifier ([`notifier`]); none: nobody is notified.
    pub notifier: Option<Notifier>,
}

/// The notifier `settings` ask for: none without a channels file; an error, naming what
/// is wrong, for a file or console URL that cannot be used (the start stops on it).
pub fn notifier(settings: &RelaySettings) -> Result<Option<Notifier>, String> {
    let Some(path) = &settings.notify_channels_file else {
        return Ok(None);
    };
    Ok(Some(Notifier {
        channels: Channels::load(path).map_err(|e| format!("NOTIFY_CHANNELS_FILE {e}"))?,
        reminder_before_s: settings.notify_reminder_before_s,
        console_url: settings
            .notify_console_url
            .as_deref()
            .map(notify::console_url)
            .transpose()?,
        lease_s: settings.notify_lease_s,
    }))
}

/// Relays until `shutdown`, then finishes the round in hand and closes the publisher.
pub async fn run(deps: RelayDeps, shutdown: CancellationToken) {
    series::series_at_zero();
    let gauges = tokio::spawn(gauges::run(deps.store.clone(), shutdown.clone()));
    let depths = tokio::spawn(dead_letters::run(deps.publisher.clone(), shutdown.clone()));
    let kept = deps.settings.keep_dead_letters.then(|| {
        tokio::spawn(keep_dead_letters::run(
            deps.store.clone(),
            deps.publisher.clone(),
            shutdown.clone(),
        ))
    });
    notify::series_at_zero();
    let notifying = deps
        .notifier
        .map(|n| tokio::spawn(notify::run(deps.store.clone(), n, shutdown.clone())));
    let retention = tokio::spawn(retention::run(
        deps.store.clone(),
        deps.settings.outbox_retention_s,
        shutdown.clone(),
    ));
    let round = Round {
        store: deps.store.clone(),
        publisher: deps.publisher.clone(),
        source: fleet_core::events::source(&deps.namespace),
        batch: deps.settings.relay_batch,
    };
    info!(batch = round.batch, source = %round.source, "relaying outcome events");
    relay(&round, deps.settings.poll_interval(), &shutdown).await;
    shutdown.cancel();
    let _ = tokio::join!(gauges, depths, retention);
    if let Some(kept) = kept {
        let _ = kept.await;
    }
    if let Some(notifying) = notifying {
        let _ = notifying.await;
    }
    deps.publisher.close().await;
}

async fn relay(round: &Round, poll: Duration, shutdown: &CancellationToken) {
    // Whether to look at the outbox before taking: not right after a round that
    // published everything it took, when the take is likely to find events anyway.
    let mut look = true;
    while !shutdown.is_cancelled() {
        match round.run(look).await {
            // Everything taken went out: the next events of those operations are heads
            // now, and a full batch may have left others waiting.
            Ok(r) if r.taken > 0 && r.published.len() == r.taken => {
                look = false;
                continue;
            }
            // Nothing waiting, or the broker did not confirm everything (already logged
            // by the round): look again after the interval, no hot retry loop.
            Ok(_) => {}
            Err(e) => warn!(error = %e, "relay round failed; retrying after the poll interval"),
        }
        look = true;
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(poll) => {}
        }
    }
}
