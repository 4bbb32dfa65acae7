-- Each possible-duplicate probe goes by its own index, whatever the planner guesses.
--
-- The two probes of 0093 (the latest other payment to the payee for the same invoice, and
-- the latest of the same amount and currency) each have an index whose key begins with the
-- tenant and the payee. Either index could therefore serve either probe: the other probe's
-- index bounds the scan by the tenant and the payee, then checks the rest row by row.
-- Without statistics (the fleet never analyses, and the image's Postgres runs no
-- autovacuum) both scans are estimated at one row, and the planner keeps the smaller
-- index, so the amount probe walked the invoice index over every payment to the payee in
-- the last seven days and sorted them: about 1,200 pages for a payee with 700 recent
-- payments, read by every intent to it, growing with the payee's history.
--
-- An index can serve a query only if the query's conditions imply the index's predicate,
-- and the planner proves that before it compares costs. A probe's equality on the index's
-- own expression (`payload ->> 'invoice_id' = $5`, `payload -> 'amount_minor' = …`) is
-- strict, so it implies that expression IS NOT NULL; the other probe says nothing of it.
-- So each index now also requires its own member to be present: every payment has both
-- (the intent's schema requires them), so each index holds the same rows as before, but
-- the invoice index can no longer answer the amount probe, nor the amount index the
-- invoice probe. The probes' text does not change.
--
-- Built under the same names, in this migration's transaction: intake's probes wait for
-- the build, and no moment exists without the indexes.

DROP INDEX operations_payments_by_invoice;
CREATE INDEX operations_payments_by_invoice
    ON operations (tenant_id, (payload ->> 'beneficiary_id'), (payload ->> 'invoice_id'),
                   created_at, operation_id)
    WHERE action = 'payment.create' AND (payload ->> 'invoice_id') IS NOT NULL;

DROP INDEX operations_payments_by_amount;
CREATE INDEX operations_payments_by_amount
    ON operations (tenant_id, (payload ->> 'beneficiary_id'), (payload ->> 'currency'),
                   (payload -> 'amount_minor'), created_at, operation_id)
    WHERE action = 'payment.create' AND (payload -> 'amount_minor') IS NOT NULL;
