//! The last check before a call, for an operation whose policy asks for signed approvals:
//! every approval of the stored hash is verified again, here, with `fleet_core`'s rule,
//! over the statement rebuilt from this worker's own copy of the row (never from anything
//! the API wrote about it), against the keys as registered now and the database clock.
//! The database already refused to mark the operation approved without enough approvals
//! naming registered keys; only this check proves that their holders signed.

use fleet_core::count_signed;
use fleet_store::{OperationRow, StoreError};
use tracing::warn;

use crate::handler::ExecuteHandler;

impl ExecuteHandler {
    /// Whether at least `signatures_required` distinct approvers' signatures of the
    /// operation's statement count now.
    pub(crate) async fn signatures_hold(&self, row: &OperationRow) -> Result<bool, StoreError> {
        let signed = self
            .deps
            .store
            .signed_approvals(row.key(), row.payload_hash.as_str())
            .await?;
        let count = count_signed(
            &row.statement_subject(),
            &signed.approvals,
            &signed.keys,
            signed.now,
        );
        if count.meets(row.signatures_required) {
            return Ok(true);
        }
        // Principals and reasons only: a signature is not a secret, but it says nothing a
        // person reading the log needs.
        let refused: Vec<String> = count
            .refused
            .iter()
            .map(|(principal, why)| format!("{principal}: {}", why.code()))
            .collect();
        warn!(
            operation_id = %row.operation_id,
            valid = count.valid,
            required = row.signatures_required,
            refused = ?refused,
            "too few valid approval signatures; escalating without a call"
        );
        Ok(false)
    }
}
