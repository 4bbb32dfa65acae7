-- The `possible_duplicate` risk cue (`fleet_core::risk::duplicate`): at intake, a payment
-- is judged against the tenant's payments to the same payee made in the last 7 days that
-- may still pay or have paid. That read names the tenant and the payee and bounds
-- `created_at`, so one index answers it, in that order.
--
-- The index is partial on the action only, never on the status: the rows it holds do
-- not move in and out of it as operations settle, and no plan depends on statistics of
-- how many rows are in which status (statistics that are stale until the table is next
-- analysed). The status and approval of the few rows found are filtered in the scan.
-- Without it the read would take the tenant's slice of the primary key, every operation
-- of the tenant.
--
-- No function, trigger or refusal: the cue is advice shown to approvers, computed by the
-- intake and kept immutable with the others (`operations.risk`, 0049).

CREATE INDEX operations_recent_payments_to_payee
    ON operations (tenant_id, (payload ->> 'beneficiary_id'), created_at)
    WHERE action = 'payment.create';
