//! The providers fleet calls, by the names intent.v1's `provider`, the rows, the metrics
//! and `/webhooks/{provider}` use. A closed set, like the catalogue: each serves some of
//! its actions and has its mapping in `fleet_providers`; adding one is a variant here, its
//! spec (`catalogue::provider_spec`), its mapping there, the actions it serves, and its
//! name in `operations_provider_check` (a migration).

use crate::by_name::{display_by_name, serialize_by_name};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProviderName {
    Payments,
    Crm,
    Orders,
    Esign,
}

impl ProviderName {
    /// Every provider, in the order the catalogue first names them.
    pub const ALL: [ProviderName; 4] = [
        ProviderName::Payments,
        ProviderName::Crm,
        ProviderName::Orders,
        ProviderName::Esign,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ProviderName::Payments => "payments",
            ProviderName::Crm => "crm",
            ProviderName::Orders => "orders",
            ProviderName::Esign => "esign",
        }
    }

    pub fn parse(s: &str) -> Option<ProviderName> {
        ProviderName::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

display_by_name!(ProviderName);

serialize_by_name!(ProviderName);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_serialise_as_the_column_holds_them() {
        for p in ProviderName::ALL {
            assert_eq!(ProviderName::parse(p.as_str()), Some(p));
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
        }
        assert_eq!(ProviderName::parse("stripe"), None);
    }
}
