//! execute's pause points for crash tests (`FLEET_PAUSE_AT`, see
//! [`fleet_runtime::pause`]): around the provider call and the record of its answer.

pub use fleet_runtime::pause::point;

pub const BEFORE_PROVIDER_CALL: &str = "before_provider_call";
pub const AFTER_PROVIDER_RESPONSE: &str = "after_provider_response";
pub const AFTER_RECORD: &str = "after_record";
