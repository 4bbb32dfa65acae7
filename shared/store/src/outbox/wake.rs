//! The relay's wake-up: one dedicated connection (a pooled one would lose notifications
//! between checkouts) that LISTENs on the channel the outbox trigger notifies, and wakes
//! the relay on every notification. The relay polls as well, so while this connection is
//! down (it reconnects with backoff) events are only delayed, never stranded.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{stream, StreamExt};
use tokio::sync::Notify;
use tokio_postgres::{AsyncMessage, NoTls};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::Store;

/// The channel `operation_events_to_outbox()` notifies (migration 0009).
pub const OUTBOX_CHANNEL: &str = "fleet_outbox";

const RECONNECT_MIN: Duration = Duration::from_millis(200);
const RECONNECT_MAX: Duration = Duration::from_secs(10);

impl Store {
    /// Listens until `shutdown`, calling `wake.notify_one()` for every notification and
    /// once after each (re)connect (events committed while nobody listened).
    pub async fn forward_outbox_wakeups(&self, wake: Arc<Notify>, shutdown: CancellationToken) {
        let mut delay = RECONNECT_MIN;
        loop {
            match listen(&self.config, &wake, &shutdown).await {
                Ok(()) => return,
                Err(reason) => warn!(
                    reason,
                    "outbox listener lost; the relay polls until it is back"
                ),
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(delay) => {}
            }
            delay = (delay * 2).min(RECONNECT_MAX);
        }
    }
}

/// One connection's life: `Ok` at shutdown, `Err` with a reason when the connection ends.
async fn listen(
    config: &tokio_postgres::Config,
    wake: &Notify,
    shutdown: &CancellationToken,
) -> Result<(), String> {
    let (client, mut connection) = config.connect(NoTls).await.map_err(|e| e.to_string())?;
    let mut messages = stream::poll_fn(move |cx| connection.poll_message(cx));
    // The connection only makes progress while its messages are polled, so the LISTEN
    // is driven together with them.
    let statement = format!("LISTEN {OUTBOX_CHANNEL}");
    let listen = client.batch_execute(&statement);
    tokio::pin!(listen);
    loop {
        tokio::select! {
            r = &mut listen => { r.map_err(|e| e.to_string())?; break; }
            m = messages.next() => handle(m, wake)?,
        }
    }
    debug!("listening for outbox notifications");
    wake.notify_one();
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            m = messages.next() => handle(m, wake)?,
        }
    }
}

fn handle(
    message: Option<Result<AsyncMessage, tokio_postgres::Error>>,
    wake: &Notify,
) -> Result<(), String> {
    match message {
        Some(Ok(AsyncMessage::Notification(_))) => {
            wake.notify_one();
            Ok(())
        }
        Some(Ok(_)) => Ok(()),
        Some(Err(e)) => Err(e.to_string()),
        None => Err("connection closed".into()),
    }
}
