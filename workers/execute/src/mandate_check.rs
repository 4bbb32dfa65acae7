//! The last check before a call, for an operation a standing mandate approved at claim
//! (`decided_by` = `mandate:<id>`): the mandate's statement is read again and its
//! signature verified, over the statement's canonical bytes, with its signer's key as
//! registered now (`fleet_core::mandate::check_mandate`), and what was signed must cover
//! this worker's own copy of the row. The database took the budget and checked who signed
//! with which key; only this check proves the key's holder signed those limits, so a
//! mandate written by anything but its signer's key pays nothing.

use fleet_core::mandate::{check_mandate, MandatedOperation};
use fleet_store::{OperationRow, StoreError};
use tracing::warn;

use crate::deps::ExecuteDeps;

/// The mandate an operation's approval names, if a mandate approved it.
pub(crate) fn mandate_of(row: &OperationRow) -> Option<&str> {
    row.decided_by.as_deref()?.strip_prefix("mandate:")
}

/// Whether the mandate `mandate_id` that approved `row` is its signer's and covers it.
pub(crate) async fn mandate_holds(
    deps: &ExecuteDeps,
    row: &OperationRow,
    mandate_id: &str,
) -> Result<bool, StoreError> {
    let Some(evidence) = deps.store.mandate_evidence(row.key(), mandate_id).await? else {
        warn!(operation_id = %row.operation_id, mandate_id, "the mandate that approved it is not stored; escalating without a call");
        return Ok(false);
    };
    let Some(signature) = evidence.signature.as_ref() else {
        warn!(operation_id = %row.operation_id, mandate_id, "the mandate's signature is unreadable; escalating without a call");
        return Ok(false);
    };
    let op = MandatedOperation {
        tenant_id: &row.tenant_id,
        action: row.action,
        payload: &row.payload,
        payee: row.payee.as_ref(),
        submitted_by: evidence.submitted_by.as_deref(),
    };
    match check_mandate(
        &evidence.statement,
        &evidence.signed_by,
        evidence.created_at,
        signature,
        evidence.key.as_ref(),
        &op,
    ) {
        Ok(_) => Ok(true),
        Err(refusal) => {
            warn!(operation_id = %row.operation_id, mandate_id, refusal = refusal.code(), "the mandate does not hold; escalating without a call");
            Ok(false)
        }
    }
}
