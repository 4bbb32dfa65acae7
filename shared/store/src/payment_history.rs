//! What risk cues are judged over (`fleet_core::risk`): what a tenant's succeeded payments
//! say about one payee and one bank account, read from the aggregates the database keeps
//! as each payment succeeds (`migrations/0059_payee_aggregates.sql`), by primary key: a
//! constant number of rows whatever the history; and the other payments to the payee that
//! may make this one a possible duplicate, the latest of each kind, one index probe each
//! (`migrations/0093_possible_duplicate_probes.sql`). Read at intake, in one statement.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use fleet_core::risk::{PaidBefore, PaymentAsked, RecentPayment};
use fleet_core::{ApprovalStatus, Status};
use tokio_postgres::Row;

use crate::component::StoreIntents;
use crate::StoreAs;
use crate::StoreError;

/// Three primary-key reads in one statement (always one row): the payee's aggregate, its
/// amounts in the payment's currency, the account's aggregate. `$3` NULL (no account
/// known) matches no account. Public for the test that holds it to a constant number of
/// pages read.
pub const PAID_BEFORE: &str = "
SELECT p.payments AS payments_to_payee, p.last_account_fingerprint,
       c.payments AS payments_to_account, a.latest_amounts
FROM (VALUES (1)) AS one
LEFT JOIN paid_payees p ON p.tenant_id = $1 AND p.beneficiary_id = $2
LEFT JOIN paid_accounts c ON c.tenant_id = $1 AND c.account_fingerprint = $3
LEFT JOIN paid_payee_amounts a ON a.tenant_id = $1 AND a.beneficiary_id = $2 AND a.currency = $4";

/// What a payment's risk cues are judged over, in one statement (always one row): the
/// [`PAID_BEFORE`] aggregates (`$1` to `$4`), then the two other payments to the payee
/// since `$7` that may make this one a possible duplicate, each the latest of its kind
/// that may still pay or has paid (the rule, `fleet_core::risk::duplicate`, judges
/// again): for the same invoice `$5`, and of the same amount `$6` in the currency `$4`.
/// The payment itself (`$8`) and the one it supersedes (`$9`) are skipped. Each is one
/// backward probe of its index (`migrations/0093_possible_duplicate_probes.sql`) whose
/// key ends in the order asked, so it stops at the first row that may still pay whatever
/// the payee's history. The tenant is named only inside the array the index begins with
/// (`migrations/0101_duplicate_probes_keyed_by_tenant_and_payee_together.sql`): a plain
/// `tenant_id = $1` would let the tenant's index by creation time serve the probe, and a
/// connection that planned it while the table was nearly empty took that index and kept
/// it, walking the tenant's last seven days on every read. The plain payee and member
/// conditions stay beside the array: the member's is what its index's predicate asks
/// for, and neither matches a missing value, which equal NULL elements of arrays do.
/// Public for the test that holds it to its indexes.
pub static PAYMENT_RISK: LazyLock<String> = LazyLock::new(|| {
    // `member` and `param`: the probe's own member of the payload and the parameter it
    // must equal, the third element of the key the probe's index begins with.
    let candidate = |alias: &str, (member, param): (&str, &str), same: &str| {
        let key = format!(
                "ARRAY[tenant_id, payload ->> 'beneficiary_id', payload ->> '{member}'] = ARRAY[$1, $2, {param}]"
            );
        format!(
            "
LEFT JOIN LATERAL (
  SELECT operation_id, payload ->> 'beneficiary_id' AS beneficiary_id,
         payload ->> 'invoice_id' AS invoice_id,
         (payload ->> 'amount_minor')::bigint AS amount_minor,
         payload ->> 'currency' AS currency, status, approval_status, created_at
  FROM operations
  WHERE action = 'payment.create' AND {key}
    AND (payload ->> 'beneficiary_id') = $2 AND {same} AND created_at >= $7
    AND operation_id <> $8 AND operation_id IS DISTINCT FROM $9
    AND status NOT IN ('failed', 'cancelled') AND approval_status NOT IN ('rejected', 'expired')
  ORDER BY created_at DESC, operation_id DESC
  LIMIT 1) {alias} ON true"
        )
    };
    format!(
        "SELECT paid.*, {invoice}, {amount}\nFROM ({PAID_BEFORE}) AS paid{}{}",
        candidate(
            "by_invoice",
            ("invoice_id", "$5"),
            "(payload ->> 'invoice_id') = $5"
        ),
        candidate(
            "by_amount",
            ("currency", "$4"),
            "(payload ->> 'currency') = $4 AND (payload -> 'amount_minor') = to_jsonb($6::bigint)"
        ),
        invoice = CANDIDATE_COLUMNS
            .map(|c| format!("by_invoice.{c}"))
            .join(", "),
        amount = CANDIDATE_COLUMNS
            .map(|c| format!("by_amount.{c}"))
            .join(", "),
    )
});

/// The columns of one possible duplicate, in the order [`candidate`] reads them.
const CANDIDATE_COLUMNS: [&str; 8] = [
    "operation_id",
    "beneficiary_id",
    "invoice_id",
    "amount_minor",
    "currency",
    "status",
    "approval_status",
    "created_at",
];

/// The columns of [`PAID_BEFORE`], which [`PAYMENT_RISK`]'s candidates follow.
const PAID_COLUMNS: usize = 4;

/// What `row`'s aggregates ([`PAID_BEFORE`]'s columns, first) say.
fn paid_before_of(row: &Row) -> PaidBefore {
    let count = |column: usize| {
        row.get::<_, Option<i64>>(column)
            .map_or(0, |n| u64::try_from(n).unwrap_or(0))
    };
    PaidBefore {
        payments_to_payee: count(0),
        last_account: row.get(1),
        payments_to_account: count(2),
        latest_amounts: row.get::<_, Option<Vec<i64>>>(3).unwrap_or_default(),
    }
}

/// The possible duplicate whose columns start at `first`, if one was found.
fn candidate(row: &Row, first: usize) -> Option<RecentPayment> {
    let operation_id = row.get::<_, Option<String>>(first)?;
    Some(RecentPayment {
        operation_id,
        beneficiary_id: row.get::<_, Option<String>>(first + 1)?,
        invoice_id: row.get::<_, Option<String>>(first + 2)?,
        amount_minor: row.get::<_, Option<i64>>(first + 3)?,
        currency: row.get::<_, Option<String>>(first + 4)?,
        status: Status::parse(row.get::<_, Option<&str>>(first + 5)?)?,
        approval: ApprovalStatus::parse(row.get::<_, Option<&str>>(first + 6)?)?,
        created_at: row.get::<_, Option<DateTime<Utc>>>(first + 7)?,
    })
}

impl<R: StoreIntents> StoreAs<R> {
    /// What `tenant`'s succeeded payments say about `beneficiary_id`, the account
    /// `fingerprint` and the payee's amounts in `currency`.
    pub async fn paid_before(
        &self,
        tenant: &str,
        beneficiary_id: &str,
        fingerprint: Option<&str>,
        currency: &str,
    ) -> Result<PaidBefore, StoreError> {
        let client = self.client().await?;
        let read = client.prepare_cached(PAID_BEFORE).await?;
        let row = client
            .query_one(&read, &[&tenant, &beneficiary_id, &fingerprint, &currency])
            .await?;
        Ok(paid_before_of(&row))
    }

    /// What `tenant`'s records say about `asked`, a payment to be judged, with the account
    /// `fingerprint` the directory names now: its payee's and account's aggregates (as
    /// [`Self::paid_before`]) and the other payments to the payee made since `since` that
    /// may make it a possible duplicate (at most two: the latest for the same invoice, the
    /// latest of the same amount). One statement, one round trip.
    pub async fn payment_risk(
        &self,
        tenant: &str,
        asked: PaymentAsked<'_>,
        fingerprint: Option<&str>,
        since: DateTime<Utc>,
    ) -> Result<(PaidBefore, Vec<RecentPayment>), StoreError> {
        let client = self.client().await?;
        let read = client.prepare_cached(&PAYMENT_RISK).await?;
        let row = client
            .query_one(
                &read,
                &[
                    &tenant,
                    &asked.beneficiary_id,
                    &fingerprint,
                    &asked.currency,
                    &asked.invoice_id,
                    &asked.amount_minor,
                    &since,
                    &asked.operation_id,
                    &asked.supersedes,
                ],
            )
            .await?;
        let by_amount = PAID_COLUMNS + CANDIDATE_COLUMNS.len();
        let recent = [candidate(&row, PAID_COLUMNS), candidate(&row, by_amount)];
        Ok((paid_before_of(&row), recent.into_iter().flatten().collect()))
    }
}
