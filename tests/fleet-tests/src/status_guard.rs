//! What the tests of the database's guard on an operation's status share: which roles'
//! logins may write the status column at all, and an operation that succeeded.

use fleet_core::Status;
use fleet_store::{DbRole, RolePrefix};

use crate::{intent, TestFleet};

/// Whether `role`'s login may write the status column at all (the relay may not: the
/// database refuses it before any trigger runs).
pub async fn writes_status(fleet: &TestFleet, role: DbRole) -> bool {
    let login = role.login_name(&RolePrefix::of(&fleet.database_url).unwrap());
    fleet
        .sql()
        .await
        .query_one(
            "SELECT has_column_privilege($1, 'operations', 'status', 'UPDATE')",
            &[&login],
        )
        .await
        .unwrap()
        .get(0)
}

impl TestFleet {
    /// A fleet (prepare and execute in-process) whose payment was approved and paid: the
    /// fleet and the operation, `succeeded`.
    pub async fn with_a_paid_payment() -> (TestFleet, String) {
        let mut fleet = TestFleet::with_prepare().await;
        fleet.spawn_execute();
        let op = fleet.submit_and_approve(&intent()).await;
        fleet.reaches(&op, Status::Succeeded).await;
        (fleet, op)
    }
}
