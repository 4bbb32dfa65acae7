//! What the worker is built from: its store, broker, providers and settings.

use fleet_boot::ProviderWorkerDeps;
use fleet_store::component;

use crate::settings::ReconcileSettings;

/// Everything `run` needs, built by `main` (or by a test). Its publisher rings
/// `operations.execute` for operations sent back for a same-key retry; its providers carry
/// their documented contract (search lag, maximum request time, key retention).
pub type ReconcileDeps = ProviderWorkerDeps<component::Reconcile, ReconcileSettings>;
