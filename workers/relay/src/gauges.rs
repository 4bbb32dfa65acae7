//! The outbox gauges, from Postgres: every relay replica reports the same values, so
//! dashboards and alerts take `max()`.

use std::time::Duration;

use fleet_runtime::metric_names as m;
use fleet_runtime::Ticker;
use fleet_store::RelayStore;
use tokio_util::sync::CancellationToken;

/// How often the gauges are recomputed (a count over the unpublished rows' index).
pub const GAUGES_EVERY: Duration = Duration::from_secs(5);

pub async fn run(store: RelayStore, shutdown: CancellationToken) {
    let mut ticker = Ticker::new(GAUGES_EVERY, shutdown);
    while ticker.tick().await {
        match store.outbox_gauges().await {
            Ok(g) => {
                metrics::gauge!(m::OUTBOX_BACKLOG).set(g.backlog as f64);
                metrics::gauge!(m::OUTBOX_OLDEST_UNPUBLISHED_AGE_SECONDS)
                    .set(g.oldest_unpublished_age_s);
            }
            Err(e) => tracing::warn!(error = %e, "could not compute the outbox gauges"),
        }
    }
}
