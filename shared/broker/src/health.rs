//! Readiness of the broker side of a process, for `/readyz`.
//!
//! A [`BrokerHealth`] is a cheap, cloneable handle. Each component that holds a
//! connection (a `Publisher`, each running `consume_with_health`) registers a probe in
//! it. The handle reports connected iff at least one component is registered and every
//! registered component currently has a live connection *and* channel. Liveness is read
//! from lapin's own connection/channel state at query time, so a connection that dies
//! while idle shows as not ready at once, without a watcher task. A component that
//! stops (consume returned, last Publisher clone dropped) deregisters itself.

use lapin::{Channel, ChannelStatus, Connection, ConnectionStatus};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

type Slot = Mutex<Option<(ConnectionStatus, ChannelStatus)>>;

/// Shared readiness handle; see the module docs.
#[derive(Clone, Default)]
pub struct BrokerHealth {
    probes: Arc<Mutex<Vec<Weak<Slot>>>>,
}

impl BrokerHealth {
    /// A handle with no components yet (reports not connected).
    pub fn new() -> Self {
        Self::default()
    }

    /// True iff at least one component is registered and all are connected.
    pub fn is_connected(&self) -> bool {
        let mut probes = lock(&self.probes);
        probes.retain(|p| p.strong_count() > 0);
        !probes.is_empty()
            && probes.iter().all(|p| {
                p.upgrade().is_some_and(|slot| {
                    lock(&slot)
                        .as_ref()
                        .is_some_and(|(conn, ch)| conn.connected() && ch.connected())
                })
            })
    }

    /// Registers a component; it counts as disconnected until [`Probe::set`].
    pub(crate) fn register(&self) -> Probe {
        let slot = Arc::new(Slot::default());
        lock(&self.probes).push(Arc::downgrade(&slot));
        Probe { slot }
    }
}

impl std::fmt::Debug for BrokerHealth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrokerHealth")
            .field("connected", &self.is_connected())
            .finish()
    }
}

/// One component's entry in a [`BrokerHealth`]; dropping it deregisters the component.
pub(crate) struct Probe {
    slot: Arc<Slot>,
}

impl Probe {
    /// From now on this component is as alive as this connection and channel.
    pub(crate) fn set(&self, conn: &Connection, channel: &Channel) {
        *lock(&self.slot) = Some((conn.status().clone(), channel.status().clone()));
    }

    /// This component has no usable connection (reconnecting or shutting down).
    pub(crate) fn clear(&self) {
        *lock(&self.slot) = None;
    }
}

// A poisoned lock only means another thread panicked mid-update of a status snapshot;
// the data is still a valid Option, so keep serving readiness.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_components_is_not_connected() {
        assert!(!BrokerHealth::new().is_connected());
    }

    #[test]
    fn a_registered_but_unset_component_is_not_connected_and_drop_deregisters() {
        let health = BrokerHealth::new();
        let probe = health.register();
        assert!(!health.is_connected());
        probe.clear();
        drop(probe);
        assert!(!health.is_connected());
        assert!(lock(&health.probes).is_empty());
    }
}
