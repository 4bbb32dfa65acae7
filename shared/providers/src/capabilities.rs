//! What a provider's contract guarantees (whether a create can be safely repeated under
//! one key and for how long, whether the effect can be looked up, whether updates can be
//! made conditional): the capability guard's input. The type is the domain's; each
//! adapter module declares its provider's.

pub use fleet_core::catalogue::Capabilities;
