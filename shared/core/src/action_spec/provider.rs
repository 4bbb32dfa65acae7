//! The providers fleet calls, by the names intent.v1's `provider`, the rows, the metrics
//! and `/webhooks/{provider}` use. The valid names are those of the provider specs in the
//! catalogue (`catalogue::provider_spec::PROVIDERS`, the one list): a [`ProviderName`] is
//! read from text only against that list (`ProviderName::parse`), and only a spec names
//! one in code, so a value of this type always names a provider fleet has a spec, settings
//! and a mapping for. Adding a provider adds its spec there; nothing here changes.

use crate::by_name::{display_by_name, serialize_by_name};

/// A provider's name, known to be one of the catalogue's provider specs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProviderName(&'static str);

impl ProviderName {
    /// The name a spec gives its provider. Only the specs call it: every other value is
    /// parsed against their list.
    pub(crate) const fn of_spec(name: &'static str) -> ProviderName {
        ProviderName(name)
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }
}

display_by_name!(ProviderName);

serialize_by_name!(ProviderName);
