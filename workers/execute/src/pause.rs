//! execute's pause points for crash tests (`FLEET_PAUSE_AT`, see
//! [`fleet_runtime::pause`]): around the provider call and the record of its answer.

pub use fleet_runtime::pause::point;

pub const BEFORE_PROVIDER_CALL: &str = "before_provider_call";
/// The attempt's send mark is committed and the request is about to be handed to the
/// network: from here a lost claim is `unknown`.
pub const AFTER_SEND_MARK: &str = "after_send_mark";
pub const AFTER_PROVIDER_RESPONSE: &str = "after_provider_response";
pub const AFTER_RECORD: &str = "after_record";
