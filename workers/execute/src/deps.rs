//! What the worker is built from: its store, broker, providers and settings.

use fleet_boot::ProviderWorkerDeps;
use fleet_store::component;

use crate::settings::ExecuteSettings;

/// Everything `run` needs, built by `main` (or by a test). Its publisher rings
/// `operations.reconcile` after an ambiguous outcome. Its providers say what each
/// documents: a searched create waits for a provider's search lag and maximum request
/// time after an earlier uncertain attempt, and no request is sent on a key the provider
/// may have forgotten.
pub type ExecuteDeps = ProviderWorkerDeps<component::Execute, ExecuteSettings>;
