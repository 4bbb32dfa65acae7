//! The views the routes answer with, as the OpenAPI document names them ([`crate::openapi`]
//! lists them). The operation view is core's type ([`fleet_core::OperationView`], its
//! schema derived from it with core's `openapi` feature), as are the names of its statuses;
//! the routes name them here in their `#[utoipa::path]`s.

#![allow(dead_code)]

use serde::Serialize;
use utoipa::ToSchema;

pub use fleet_core::OperationView;

/// Where an operation stands: core's [`fleet_core::Status`], documented as `StatusName`.
pub type StatusName = fleet_core::Status;

/// Where its approval stands: core's [`fleet_core::ApprovalStatus`], documented as
/// `ApprovalStatusName`.
pub type ApprovalStatusName = fleet_core::ApprovalStatus;

/// One page of a listing.
#[derive(Serialize, ToSchema)]
pub struct OperationPage {
    data: Vec<OperationView>,
    /// Pass as `cursor` for the next page; null on the last page.
    next_cursor: Option<String>,
}
