-- Risk cues judged from what each payee and account was last paid, in a constant number of
-- reads per intent (docs/policies.md#risk-cues).
--
-- Until now intake read the tenant's succeeded payments to the payee and to its account,
-- up to a thousand rows per intent: the cost of an intent grew with the payee's history,
-- and past a thousand payments "the account of the last payment" and "the usual amount"
-- were judged over a window. Here the database keeps, per tenant, what the cues need:
--
-- * `paid_payees`, per payee (beneficiary id): how many payments to it succeeded, and the
--   account fingerprint of its last payment that named one. "Last" is the latest by
--   (created_at, operation_id): the payment whose intake saw the payee most recently,
--   whatever order the payments settled in;
-- * `paid_payee_amounts`, per payee and currency: the amounts of its latest 100 payments
--   in that currency (latest by (created_at, amount), newest first), whose lower median is
--   the payee's usual amount. Two payments with the same time and amount are the same
--   entry whichever is kept, so the kept amounts depend only on which payments succeeded;
-- * `paid_accounts`, per account fingerprint: how many payments to it succeeded, to any
--   payee of the tenant.
--
-- They are kept in the transaction that records a payment's success, whoever records it
-- (the execute worker, reconcile, a provider event, an operator's resolution, the owner by
-- hand): a statement trigger on `operations` counts every `payment.create` whose status
-- became `succeeded` in the statement. `succeeded` is final (0054), so each payment is
-- counted once, and the aggregates only grow. A statement trigger, not a row trigger: a
-- statement that settles many payments (a bulk correction, a test's seed) writes each
-- aggregate row once, and takes the rows' locks in key order, so two such statements
-- cannot deadlock on them.
--
-- Only the trigger writes them: the functions run with the owner's rights, no component
-- role may write the tables or call the counting function, and intake (fleet_api,
-- fleet_prepare) may only read them, by primary key.

CREATE TABLE paid_payees (
    tenant_id                 text        NOT NULL,
    beneficiary_id            text        NOT NULL,
    payments                  bigint      NOT NULL CONSTRAINT paid_payees_payments_check CHECK (payments > 0),
    -- The payee's last payment that named an account: its fingerprint, time and id.
    last_account_fingerprint  text,
    last_account_at           timestamptz,
    last_account_operation_id text,
    PRIMARY KEY (tenant_id, beneficiary_id),
    CONSTRAINT paid_payees_last_account_check CHECK (
        (last_account_fingerprint IS NULL) = (last_account_at IS NULL)
        AND (last_account_fingerprint IS NULL) = (last_account_operation_id IS NULL))
);

CREATE TABLE paid_payee_amounts (
    tenant_id      text          NOT NULL,
    beneficiary_id text          NOT NULL,
    currency       text          NOT NULL,
    -- The latest 100 payments' times and amounts, newest first, side by side.
    latest_at      timestamptz[] NOT NULL,
    latest_amounts bigint[]      NOT NULL,
    PRIMARY KEY (tenant_id, beneficiary_id, currency),
    CONSTRAINT paid_payee_amounts_latest_check CHECK (
        cardinality(latest_at) = cardinality(latest_amounts)
        AND cardinality(latest_amounts) BETWEEN 1 AND 100)
);
-- At most 1.6 kB of amounts: kept in the row (compressed if it must be), never moved to
-- the TOAST table, so reading a payee's amounts is its primary key's pages and one heap
-- page whatever the payee's history.
ALTER TABLE paid_payee_amounts ALTER COLUMN latest_at SET STORAGE MAIN,
                               ALTER COLUMN latest_amounts SET STORAGE MAIN;

-- Every success rewrites its payee's rows. Pages are kept half empty so that the new
-- version fits beside the old one (a HOT update: no new index entry, and the old version
-- is pruned by the next reader of the page): a row's versions stay on one page and its
-- primary-key lookup reads the same pages after one payment or a million, without
-- waiting for a vacuum (which may not run at all).
ALTER TABLE paid_payees SET (fillfactor = 50);
ALTER TABLE paid_payee_amounts SET (fillfactor = 50);

CREATE TABLE paid_accounts (
    tenant_id           text   NOT NULL,
    account_fingerprint text   NOT NULL,
    payments            bigint NOT NULL CONSTRAINT paid_accounts_payments_check CHECK (payments > 0),
    PRIMARY KEY (tenant_id, account_fingerprint)
) WITH (fillfactor = 50);

GRANT SELECT ON paid_payees, paid_payee_amounts, paid_accounts TO fleet_api, fleet_prepare;

-- What the aggregates take of one succeeded payment.
CREATE TYPE paid_payment AS (
    tenant_id           text,
    operation_id        text,
    beneficiary_id      text,
    account_fingerprint text,
    currency            text,
    amount_minor        bigint,
    created_at          timestamptz
);

-- An operation as a paid payment. The payload was validated at intake; the amount is read
-- only when it is a plain integer all the same, so that no row, however written, can make
-- the recording of a success fail here (an amount that is not one counts for the payee
-- and the account, not for the usual amount).
CREATE FUNCTION fleet_paid_payment(o operations) RETURNS paid_payment LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT ROW(
        o.tenant_id, o.operation_id, o.payload ->> 'beneficiary_id',
        o.payee #>> '{account,fingerprint}', o.payload ->> 'currency',
        CASE WHEN jsonb_typeof(o.payload -> 'amount_minor') = 'number'
                  AND (o.payload ->> 'amount_minor') ~ '^-?[0-9]{1,18}$'
             THEN (o.payload ->> 'amount_minor')::bigint END,
        o.created_at)::paid_payment
$$;

-- Adds `paid` (payments that just succeeded, each once) to the aggregates. Rows are
-- written in key order, table by table, so concurrent callers lock them in one order.
CREATE FUNCTION fleet_count_paid(paid paid_payment[]) RETURNS void LANGUAGE sql
SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    WITH p AS (SELECT * FROM unnest(paid) WHERE beneficiary_id IS NOT NULL),
    counted AS (SELECT tenant_id, beneficiary_id, count(*) AS payments FROM p GROUP BY 1, 2),
    last_account AS (
        SELECT DISTINCT ON (tenant_id, beneficiary_id)
               tenant_id, beneficiary_id, account_fingerprint, created_at, operation_id
        FROM p WHERE account_fingerprint IS NOT NULL
        ORDER BY tenant_id, beneficiary_id, created_at DESC, operation_id DESC)
    INSERT INTO paid_payees AS t (tenant_id, beneficiary_id, payments, last_account_fingerprint,
                                  last_account_at, last_account_operation_id)
    SELECT c.tenant_id, c.beneficiary_id, c.payments, l.account_fingerprint, l.created_at, l.operation_id
    FROM counted c LEFT JOIN last_account l USING (tenant_id, beneficiary_id)
    ORDER BY c.tenant_id, c.beneficiary_id
    ON CONFLICT (tenant_id, beneficiary_id) DO UPDATE SET
        payments = t.payments + EXCLUDED.payments,
        (last_account_fingerprint, last_account_at, last_account_operation_id) = (
            SELECT CASE WHEN newer THEN EXCLUDED.last_account_fingerprint ELSE t.last_account_fingerprint END,
                   CASE WHEN newer THEN EXCLUDED.last_account_at ELSE t.last_account_at END,
                   CASE WHEN newer THEN EXCLUDED.last_account_operation_id ELSE t.last_account_operation_id END
            FROM (SELECT EXCLUDED.last_account_fingerprint IS NOT NULL
                         AND (t.last_account_fingerprint IS NULL
                              OR (EXCLUDED.last_account_at, EXCLUDED.last_account_operation_id)
                                 > (t.last_account_at, t.last_account_operation_id)) AS newer) n);

    INSERT INTO paid_payee_amounts AS t (tenant_id, beneficiary_id, currency, latest_at, latest_amounts)
    SELECT tenant_id, beneficiary_id, currency,
           (array_agg(created_at ORDER BY created_at DESC, amount_minor DESC))[1:100],
           (array_agg(amount_minor ORDER BY created_at DESC, amount_minor DESC))[1:100]
    FROM unnest(paid)
    WHERE beneficiary_id IS NOT NULL AND currency IS NOT NULL AND amount_minor IS NOT NULL
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
    ON CONFLICT (tenant_id, beneficiary_id, currency) DO UPDATE SET
        (latest_at, latest_amounts) = (
            SELECT array_agg(at ORDER BY at DESC, amount DESC), array_agg(amount ORDER BY at DESC, amount DESC)
            FROM (SELECT at, amount
                  FROM unnest(t.latest_at || EXCLUDED.latest_at, t.latest_amounts || EXCLUDED.latest_amounts)
                       AS u(at, amount)
                  ORDER BY at DESC, amount DESC
                  LIMIT 100) kept);

    INSERT INTO paid_accounts AS t (tenant_id, account_fingerprint, payments)
    SELECT tenant_id, account_fingerprint, count(*)
    FROM unnest(paid)
    WHERE beneficiary_id IS NOT NULL AND account_fingerprint IS NOT NULL
    GROUP BY 1, 2
    ORDER BY 1, 2
    ON CONFLICT (tenant_id, account_fingerprint) DO UPDATE SET payments = t.payments + EXCLUDED.payments;
$$;
REVOKE EXECUTE ON FUNCTION fleet_count_paid(paid_payment[]) FROM PUBLIC;

-- The payments a statement moved to `succeeded`. Runs after every UPDATE statement on
-- operations; one that settles no payment costs a scan of its own (few) rows.
CREATE FUNCTION operations_count_paid() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    paid paid_payment[];
BEGIN
    paid := ARRAY(
        SELECT fleet_paid_payment(n)
        FROM settled_after n JOIN settled_before b USING (operation_id, tenant_id)
        WHERE n.action = 'payment.create' AND n.status = 'succeeded'
          AND b.status IS DISTINCT FROM 'succeeded');
    IF cardinality(paid) > 0 THEN
        PERFORM fleet_count_paid(paid);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER operations_count_paid
    AFTER UPDATE ON operations
    REFERENCING OLD TABLE AS settled_before NEW TABLE AS settled_after
    FOR EACH STATEMENT EXECUTE FUNCTION operations_count_paid();

-- The payments that succeeded before this migration. The trigger above is made first: it
-- holds a lock on operations that no writer passes until this transaction commits, so
-- every success is counted exactly once, here or by the trigger.
SELECT fleet_count_paid(ARRAY(
    SELECT fleet_paid_payment(o) FROM operations o
    WHERE o.action = 'payment.create' AND o.status = 'succeeded'));

-- The history read these indexes answered is gone: nothing else reads the succeeded
-- payments by payee or by account, and every write of a succeeded payment kept them.
DROP INDEX operations_paid_to_payee;
DROP INDEX operations_paid_to_account;
