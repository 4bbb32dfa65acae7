//! The last check before a call, for an operation whose policy asks for signed approvals:
//! which approvals of the stored hash count now is judged again, here, with
//! `fleet_core::live_quorum` (live approvers of the tenant, approvals not void), and each
//! one that counts is verified with `fleet_core`'s signature rule, over the statement
//! rebuilt from this worker's own copy of the row (never from anything the API wrote about
//! it), against the keys as registered now and the database clock. The database already
//! refused to mark the operation approved, and the claim to claim it, without enough
//! approvals by live approvers naming their live keys; only this check proves that their
//! holders signed. An approval recorded from a signed batch is verified over the batch's
//! statement as stored, which must list this operation with its stored hash.

use fleet_core::batch_approval::count_signed_with_batches;
use fleet_core::live_quorum::{approval_counts, live_quorum, QuorumSubject};
use fleet_store::{OperationRow, StoreError};
use tracing::warn;

use crate::deps::ExecuteDeps;

/// Whether at least `signatures_required` distinct approvers' signatures of the
/// operation's statement count now.
pub(crate) async fn signatures_hold(
    deps: &ExecuteDeps,
    row: &OperationRow,
) -> Result<bool, StoreError> {
    let signed = deps
        .store
        .signed_approvals(row.key(), row.payload_hash.as_str())
        .await?;
    let subject = QuorumSubject {
        tenant_id: &row.tenant_id,
        payload_hash: row.payload_hash.as_str(),
        submitted_by: signed.submitted_by.as_deref(),
        approvals_required: signed.approvals_required,
        signatures_required: row.signatures_required,
    };
    let live = live_quorum(
        &subject,
        &signed.facts,
        &signed.standings,
        &signed.key_standings(),
    );
    // Only the approvals that count now have their signatures verified; one recorded
    // from a signed batch is verified over the batch's statement.
    let counting: Vec<_> = signed
        .approvals
        .iter()
        .zip(&signed.batches)
        .zip(&signed.facts)
        .filter(|(_, facts)| approval_counts(&subject, facts, &signed.standings))
        .map(|((approval, batch), _)| (approval.clone(), batch.clone()))
        .collect();
    let count = count_signed_with_batches(
        &row.statement_subject(),
        &counting,
        &signed.keys,
        signed.now,
    );
    if live.meets(&subject) && count.meets(row.signatures_required) {
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
        live_approvals = live.counted,
        required = row.signatures_required,
        refused = ?refused,
        "too few valid approval signatures; escalating without a call"
    );
    Ok(false)
}
