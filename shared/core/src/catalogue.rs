//! The action catalogue: every side effect fleet can take, one entry each. An entry
//! ([`ActionSpec`], `crate::action_spec`) says which provider serves the action, whether it names
//! a target, how its effect comes about, which webhooks settle it, how an agent's tool
//! presents it, and, from the action's typed payload ([`ActionPayload`]), how its payload
//! is checked, said in words, how a provider's answer is classified and what a lookup
//! proves. prepare, execute, reconcile, webhook-ingest, the API, the console and the MCP
//! tools all read these entries; none of them matches on the action itself.
//!
//! Adding an action is: a typed payload implementing [`ActionPayload`] (a file under
//! `actions/`), its [`ActionSpec`] constant, a variant of [`Action`] and a line in
//! [`CATALOGUE`] (in the variant's order), plus the provider adapter's request and lookup
//! (`fleet_providers`), and beside the code its schema rule and fixtures, a policy naming
//! it, a migration admitting it and a simulator route (`fleet-tests`' `action_pieces`
//! names whichever an action lacks). docs/adding-an-action.md walks through one.

pub mod capabilities;
pub mod guarantees;
pub mod provider_spec;

use crate::actions;
use crate::objects::ObjectRef;

pub use crate::action_spec::{
    Action, ActionPayload, ActionSpec, Behaviour, Effect, ProviderName, Subject, Target, ToolText,
    WebhookSpec,
};
pub use capabilities::{guard, ProviderCapabilities};
pub use guarantees::Capabilities;
pub use provider_spec::{ContractDefaults, Dialect, ProviderSpec, PROVIDERS};

/// Every action, in catalogue order.
pub static CATALOGUE: [&ActionSpec; 7] = [
    &actions::payment_create::SPEC,
    &actions::refund_create::SPEC,
    &actions::deal_create::SPEC,
    &actions::deal_update::SPEC,
    &actions::order_status_change::SPEC,
    &actions::contract_send::SPEC,
    &actions::charge_create::SPEC,
];

// Each entry sits at its action's index, so `Action::spec` is an array read.
const _: () = {
    let mut i = 0;
    while i < CATALOGUE.len() {
        assert!(
            CATALOGUE[i].action as usize == i,
            "CATALOGUE is not in Action's order"
        );
        i += 1;
    }
};

// An action's entry, and what it names, are read here: the entries are listed here, and
// the actions' files that hold them name the `Action` they are of.
impl Action {
    /// The action's catalogue entry.
    pub fn spec(self) -> &'static ActionSpec {
        CATALOGUE[self as usize]
    }

    pub fn wire_name(self) -> &'static str {
        self.spec().wire_name
    }

    pub fn parse(s: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|a| a.wire_name() == s)
    }
}

// A row's action serialises, and prints, as the wire name its column holds.
impl serde::Serialize for Action {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.wire_name())
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.wire_name())
    }
}

impl ObjectRef {
    /// The wire names of the actions that record such an object.
    pub fn recorded_by_names(&self) -> Vec<&'static str> {
        self.recorded_by.iter().map(|a| a.wire_name()).collect()
    }
}

/// Every provider some action is served by, in catalogue order, once each.
pub fn providers() -> Vec<ProviderName> {
    let mut out: Vec<ProviderName> = Vec::new();
    for spec in CATALOGUE {
        if !out.contains(&spec.provider) {
            out.push(spec.provider);
        }
    }
    out
}

/// The providers whose events settle some action.
pub fn webhook_providers() -> Vec<ProviderName> {
    let mut out: Vec<ProviderName> = Vec::new();
    for spec in CATALOGUE.iter().filter(|s| s.webhook.is_some()) {
        if !out.contains(&spec.provider) {
            out.push(spec.provider);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_finds_its_entry_and_names_round_trip() {
        for action in Action::ALL {
            assert_eq!(action.spec().action, action);
            assert_eq!(Action::parse(action.wire_name()), Some(action));
            assert_eq!(
                action.spec().tool.name,
                action.wire_name().replace('.', "_")
            );
        }
        assert_eq!(Action::ALL.len(), CATALOGUE.len());
        assert_eq!(Action::parse("payment.delete"), None);
    }

    #[test]
    fn a_target_is_required_exactly_of_conditional_updates() {
        for spec in CATALOGUE {
            let required = matches!(spec.target, Target::Required(_));
            assert_eq!(
                required,
                spec.effect == Effect::ConditionalUpdate,
                "{}",
                spec.wire_name
            );
        }
    }

    #[test]
    fn every_tool_schema_is_an_object_with_a_payload() {
        for spec in CATALOGUE {
            let schema = spec.proposal_schema();
            assert_eq!(schema["type"], "object", "{}", spec.wire_name);
            assert!(
                schema["properties"]["payload"].is_object(),
                "{}",
                spec.wire_name
            );
        }
    }

    #[test]
    fn providers_are_listed_once() {
        // Written over the catalogue, not today's names, so that a new provider needs
        // only its spec and its mapping.
        let all = providers();
        let mut unique = all.clone();
        unique.sort_by_key(|p| p.as_str());
        unique.dedup();
        assert_eq!(unique.len(), all.len(), "a provider listed twice: {all:?}");
        // Every provider serves some action, and each action's provider has its spec.
        assert_eq!(all, ProviderName::all().collect::<Vec<_>>());
        for provider in webhook_providers() {
            assert!(
                CATALOGUE
                    .iter()
                    .any(|s| s.provider == provider && s.webhook.is_some()),
                "{provider:?} is listed for webhooks without an action its events settle"
            );
        }
        assert!(!webhook_providers().is_empty());
    }
}
