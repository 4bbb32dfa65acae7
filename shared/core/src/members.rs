//! intent.v1's members as every reading of them shares them: the JSON Schema each is
//! described with ([`schemas`]), the checks types cannot state ([`checks`]), both within
//! intent.v1's limits (`crate::intent_limits`), and the arguments of an action's tool,
//! which are intent.v1's members but those the tool implies ([`arguments`]). The
//! envelope's reading (`crate::intent`) and the actions' payloads (`crate::actions`) are
//! both written with them.

pub mod arguments;
pub(crate) mod checks;
pub mod schemas;
