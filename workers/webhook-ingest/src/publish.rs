//! The receiver's way onto `webhooks.ingest`: a [`Publisher`] (publisher confirms,
//! reconnects after a failure) that the receiver does not need at start. While the
//! broker is unreachable the receiver still answers, with 503, so the provider retries
//! later and nothing is lost; a background task keeps trying to connect, so readiness
//! recovers without traffic.

use std::sync::{Arc, PoisonError, RwLock};

use fleet_broker::{
    BrokerConfig, BrokerError, BrokerHealth, Publisher, Queue, RECONNECT_BACKOFF_MAX_MS,
    RECONNECT_BACKOFF_MIN_MS,
};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

pub struct IngestPublisher {
    cfg: BrokerConfig,
    health: BrokerHealth,
    current: RwLock<Option<Publisher>>,
    /// One connection attempt at a time; requests arriving meanwhile wait for its result.
    connecting: Mutex<()>,
}

impl IngestPublisher {
    /// Connects lazily; the publisher registers in `health` once connected.
    pub fn new(cfg: BrokerConfig, health: BrokerHealth) -> Arc<IngestPublisher> {
        Arc::new(IngestPublisher {
            cfg,
            health,
            current: RwLock::new(None),
            connecting: Mutex::new(()),
        })
    }

    /// Publishes one envelope and waits for the broker's confirm. `Err`: the broker did
    /// not take it (down, unreachable, no confirm in time), so the caller answers 503.
    pub async fn publish(&self, body: &[u8]) -> Result<(), BrokerError> {
        let publisher = match self.connected() {
            Some(p) => p,
            None => self.connect().await?,
        };
        publisher.publish(Queue::WebhooksIngest, body).await
    }

    /// True once a connection was made; the Publisher's own probe in the shared
    /// `BrokerHealth` reports later outages.
    pub fn is_connected(&self) -> bool {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// Keeps trying to connect, with capped backoff, until connected or shut down.
    pub async fn keep_connecting(self: Arc<Self>, shutdown: CancellationToken) {
        let mut delay_ms = RECONNECT_BACKOFF_MIN_MS;
        while !self.is_connected() {
            match self.connect().await {
                Ok(_) => return,
                Err(e) => {
                    warn!(broker = %self.cfg.log_target(), error = %e, "webhook publisher not connected; deliveries get 503")
                }
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(std::time::Duration::from_millis(delay_ms)) => {}
            }
            delay_ms = (delay_ms * 2).min(RECONNECT_BACKOFF_MAX_MS);
        }
    }

    pub async fn close(&self) {
        let current = self
            .current
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(publisher) = current {
            publisher.close().await;
        }
    }

    fn connected(&self) -> Option<Publisher> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    async fn connect(&self) -> Result<Publisher, BrokerError> {
        let _one_at_a_time = self.connecting.lock().await;
        if let Some(p) = self.connected() {
            return Ok(p);
        }
        let publisher = Publisher::connect_with_health(&self.cfg, &self.health).await?;
        info!(broker = %self.cfg.log_target(), "webhook publisher connected");
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Some(publisher.clone());
        Ok(publisher)
    }
}
