//! The actions of the catalogue, one file each: the typed payload as intent.v1 carries
//! it, the rules that belong to it (checks, the approver's sentence, the classification
//! of its provider's answers, what a lookup proves) and its catalogue entry. What several
//! of them share sits beside them: the search by our reference ([`search`]).

pub mod charge_create;
pub mod contract_send;
pub mod deal_create;
pub mod deal_update;
pub mod order_status_change;
pub mod payment_create;
pub mod refund_create;
pub mod search;
