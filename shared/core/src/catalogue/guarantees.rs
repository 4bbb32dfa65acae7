//! What a provider guarantees ([`Capabilities`]): each provider's spec states it
//! (`provider_spec`), an operator may declare less for a deployment of it, and the
//! capability guard (`capabilities`) judges every intent by it.

use std::time::Duration;

/// What a provider guarantees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// `Some(retention)`: creates are deduplicated by `Idempotency-Key`, and the provider
    /// keeps a key this long.
    pub idempotent_create: Option<Duration>,
    /// The effect can be found again (by our reference in a search, by its id, or by the
    /// target it changed).
    pub lookup: bool,
    /// Changes can be made conditional (a version, a precondition) and are refused when
    /// the condition no longer holds.
    pub conditional_update: bool,
    /// Who an effect goes to can be looked up by the payee's id, strongly consistent, with
    /// a version that grows on every change of the payee's name, country or account.
    pub payee_lookup: bool,
    /// A create can be made conditional on the payee's version, and is refused, with
    /// nothing created, when the payee changed since.
    pub payee_precondition: bool,
}

impl Capabilities {
    /// Nothing guaranteed.
    pub const NONE: Capabilities = Capabilities {
        idempotent_create: None,
        lookup: false,
        conditional_update: false,
        payee_lookup: false,
        payee_precondition: false,
    };

    /// How long a key is honoured, in ms (`u64::MAX` without keys: nothing to outlive).
    pub fn key_retention_ms(&self) -> u64 {
        self.idempotent_create.map_or(u64::MAX, |r| {
            u64::try_from(r.as_millis()).unwrap_or(u64::MAX)
        })
    }
}

/// The guarantees an operator may declare for a provider, by name
/// (`<PREFIX>CAPABILITIES`, `ProviderSpec::declared_capabilities` in `provider_spec`).
pub const DECLARABLE: [&str; 3] = ["idempotent_create", "lookup", "conditional_update"];

impl Capabilities {
    /// `self` and the guarantee an operator declared by `name`. An unknown name is an
    /// error rather than silently granting nothing.
    pub fn declaring(self, name: &str) -> Result<Capabilities, String> {
        Ok(match name {
            // A declared provider states no retention: a key it honours is trusted for as
            // long as it stores the effect.
            "idempotent_create" => Capabilities {
                idempotent_create: Some(Duration::MAX),
                ..self
            },
            "lookup" => Capabilities {
                lookup: true,
                ..self
            },
            "conditional_update" => Capabilities {
                conditional_update: true,
                ..self
            },
            other => {
                return Err(format!(
                    "unknown capability {other:?} ({})",
                    DECLARABLE.join(", ")
                ))
            }
        })
    }

    /// The declarable guarantees `self` offers, by name: a declared list's default.
    pub fn declared_names(&self) -> Vec<&'static str> {
        let offers = [
            self.idempotent_create.is_some(),
            self.lookup,
            self.conditional_update,
        ];
        DECLARABLE
            .into_iter()
            .zip(offers)
            .filter_map(|(name, offered)| offered.then_some(name))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declared_list_grants_what_it_names_and_refuses_an_unknown_name() {
        let declared = ["lookup", "conditional_update"]
            .into_iter()
            .try_fold(Capabilities::NONE, Capabilities::declaring)
            .unwrap();
        assert_eq!(declared.declared_names(), ["lookup", "conditional_update"]);
        assert_eq!(declared.idempotent_create, None);
        let keyed = Capabilities::NONE.declaring("idempotent_create").unwrap();
        assert_eq!(keyed.idempotent_create, Some(Duration::MAX));
        let unknown = Capabilities::NONE.declaring("webhooks").unwrap_err();
        assert!(unknown.contains("\"webhooks\""), "{unknown}");
    }
}
