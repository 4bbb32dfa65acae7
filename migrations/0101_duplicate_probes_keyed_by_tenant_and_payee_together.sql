-- Each possible-duplicate probe is keyed so that no other index of `operations` can
-- answer it, whatever the size of the table when the probe was planned.
--
-- The fleet's connections plan every statement once (generic plans) and keep that plan
-- for the connection's life. A connection that first ran intake's risk read while
-- `operations` held a few dozen rows planned it when every index was a single page: the
-- probes' indexes and `operations_tenant_created` (tenant, created_at, operation_id) then
-- cost the same, and the latter, with fewer conditions to check, won. The probe's
-- `tenant_id = $1 AND created_at >= $7 ORDER BY created_at DESC, operation_id DESC LIMIT 1`
-- is exactly what that index serves, so the connection went on to walk every operation
-- of the tenant from the last seven days for each probe, as the table grew. Some
-- benchmark runs paid half as much again for intake's Postgres time because of it.
--
-- Now each probe's index begins with one array of the tenant, the payee and the probe's
-- own member (`ARRAY[tenant_id, payload ->> 'beneficiary_id', payload ->> 'invoice_id']`,
-- and with the currency for the amount probe), and the probes name the tenant only inside
-- that array. No other index has the array or can serve the probe's order without the
-- tenant fixed; walking one would mean a whole index, which no plan prefers at any size.
-- The rest of each key is as before (the amount, then created_at and operation_id), so
-- each probe still stops at the first row that may pay, and the predicates of the
-- previous migration stay, so neither index can answer the other's probe.
--
-- Built under the same names, in this migration's transaction: intake's probes wait for
-- the build, and no moment exists without the indexes.

DROP INDEX operations_payments_by_invoice;
CREATE INDEX operations_payments_by_invoice
    ON operations ((ARRAY[tenant_id, payload ->> 'beneficiary_id', payload ->> 'invoice_id']),
                   created_at, operation_id)
    WHERE action = 'payment.create' AND (payload ->> 'invoice_id') IS NOT NULL;

DROP INDEX operations_payments_by_amount;
CREATE INDEX operations_payments_by_amount
    ON operations ((ARRAY[tenant_id, payload ->> 'beneficiary_id', payload ->> 'currency']),
                   (payload -> 'amount_minor'), created_at, operation_id)
    WHERE action = 'payment.create' AND (payload -> 'amount_minor') IS NOT NULL;
