//! The actions of the catalogue, by name. The enum is what the actions' entries and the
//! objects they name refer to; an action's entry, and with it its wire name, is read from
//! the catalogue (`crate::catalogue`), which lists the entries.

/// One action of the catalogue. The discriminant is the action's index in
/// [`CATALOGUE`](crate::catalogue::CATALOGUE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    PaymentCreate,
    RefundCreate,
    CrmDealCreate,
    CrmDealUpdate,
    OrderStatusChange,
    ContractSend,
    ChargeCreate,
}

impl Action {
    pub const ALL: [Action; 7] = [
        Action::PaymentCreate,
        Action::RefundCreate,
        Action::CrmDealCreate,
        Action::CrmDealUpdate,
        Action::OrderStatusChange,
        Action::ContractSend,
        Action::ChargeCreate,
    ];
}
