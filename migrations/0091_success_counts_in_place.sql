-- The risk aggregates of a recorded success kept at a fraction of their cost
-- (docs/policies.md#risk-cues, docs/benchmark.md): the same values, written by the same
-- owner-rights functions, in the same transaction.
--
-- What it cost, and what changed:
--
-- * every UPDATE statement on operations (the claims as much as the records of answers)
--   fired two statement triggers, `operations_count_paid` and `operations_count_charged`,
--   each a call with the owner's rights and its own scan of the statement's transition
--   tables, to find in most statements no success at all. One trigger now looks once for
--   both actions and calls nothing when the statement settled neither. The per-action
--   rules stay where they were (`fleet_paid_payment`, `fleet_count_paid`,
--   `fleet_charged_charge`, `fleet_count_charged`), so a change to one action's
--   aggregates still leaves the other's functions alone.
-- * a call of `fleet_count_paid` mostly adds one payment, or a few to different payees (a
--   statement that records one answer, or execute's batch of the answers that arrived
--   together); yet each unnested, grouped and sorted its array, and merged the payee's
--   latest amounts by sorting all of them again (up to 101, three times over). A single
--   payment now updates its three rows in place (an insert only for a row not there yet):
--   no grouping, and no ON CONFLICT lock taken before the update. Several payments in one
--   call keep the grouped statements, one row written per payee, currency and account.
-- * the latest amounts are merged, one call or many, by `fleet_latest_amounts`: each new
--   amount goes in after the kept ones later than it, found from the front, where a late
--   one usually lands (or by halving, for one recorded long after); no sort. In the pipeline benchmark's run about half the successes
--   were recorded after a later payment to the same payee, but never more than six places
--   behind. The result is the very list the full sort gave (see the function).
--
-- Rows are still written table by table, and in key order within a call. A transaction
-- that records a success to a payee another transaction has just recorded one to waits
-- for that row, then adds to what the other committed (READ COMMITTED: each statement
-- sees the rows committed before it, and an update re-reads the row it waited for). The
-- rights are as before: SECURITY DEFINER with the same search_path, the counting function
-- callable by no component role (CREATE OR REPLACE keeps its owner and grants).

-- The latest 100 of a payee's kept amounts and of the ones added to them, newest first (by
-- time, then amount), as the full sort of both gives them. `kept` is sorted so (every write
-- of the table keeps it so), and so is `added` (its callers build it sorted): each added
-- entry goes in after the entries later than it, found by a few steps from the front,
-- where a payment recorded late usually is (in the pipeline benchmark's run never more
-- than six places from the newest, and at the front for half of them), then by halving
-- the rest (a payment recorded long after later ones). An entry that would come
-- after the 100th is left out. Two entries of the same time and amount are the same entry,
-- whichever is placed first. A time that is not there (a caller's NULL) takes the sort.
CREATE FUNCTION fleet_latest_amounts(kept_at timestamptz[], kept_amounts bigint[],
                                     added_at timestamptz[], added_amounts bigint[],
                                     OUT latest_at timestamptz[], OUT latest_amounts bigint[])
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    place int := 1;
    steps int;
    low int;
    high int;
    middle int;
BEGIN
    IF array_position(kept_at, NULL) IS NOT NULL OR array_position(added_at, NULL) IS NOT NULL THEN
        SELECT array_agg(at ORDER BY at DESC, amount DESC), array_agg(amount ORDER BY at DESC, amount DESC)
        INTO latest_at, latest_amounts
        FROM (SELECT at, amount
              FROM unnest(kept_at || added_at, kept_amounts || added_amounts) AS u(at, amount)
              ORDER BY at DESC, amount DESC
              LIMIT 100) kept;
        RETURN;
    END IF;
    latest_at := kept_at;
    latest_amounts := kept_amounts;
    FOR i IN 1 .. coalesce(cardinality(added_at), 0) LOOP
        -- The first place, from `place` on, whose entry is not later than the added one: a
        -- few steps from there, then by halving what is left.
        high := cardinality(latest_at) + 1;
        steps := 0;
        WHILE place < high AND (latest_at[place], latest_amounts[place]) > (added_at[i], added_amounts[i]) LOOP
            place := place + 1;
            steps := steps + 1;
            IF steps = 4 AND place < high THEN
                low := place - 1;
                WHILE high - low > 1 LOOP
                    middle := (low + high) / 2;
                    IF (latest_at[middle], latest_amounts[middle]) > (added_at[i], added_amounts[i]) THEN
                        low := middle;
                    ELSE
                        high := middle;
                    END IF;
                END LOOP;
                place := high;
                EXIT;
            END IF;
        END LOOP;
        EXIT WHEN place > 100;
        latest_at := latest_at[:place - 1] || added_at[i] || latest_at[place:];
        latest_amounts := latest_amounts[:place - 1] || added_amounts[i] || latest_amounts[place:];
        place := place + 1;
    END LOOP;
    latest_at := latest_at[:100];
    latest_amounts := latest_amounts[:100];
END $$;

CREATE OR REPLACE FUNCTION fleet_count_paid(paid paid_payment[]) RETURNS void LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    one paid_payment;
BEGIN
    IF cardinality(paid) = 1 AND (paid[1]).created_at IS NOT NULL THEN
        one := paid[1];
        IF one.beneficiary_id IS NULL THEN
            RETURN;
        END IF;

        -- Each row is updated where it exists, and inserted where it does not; an insert
        -- that finds the row made meanwhile by another transaction (which it waits for)
        -- leaves it to the update, taken again.
        LOOP
            UPDATE paid_payees AS t SET
                payments = t.payments + 1,
                (last_account_fingerprint, last_account_at, last_account_operation_id) = (
                    SELECT CASE WHEN newer THEN one.account_fingerprint ELSE t.last_account_fingerprint END,
                           CASE WHEN newer THEN one.created_at ELSE t.last_account_at END,
                           CASE WHEN newer THEN one.operation_id ELSE t.last_account_operation_id END
                    FROM (SELECT one.account_fingerprint IS NOT NULL
                                 AND (t.last_account_fingerprint IS NULL
                                      OR (one.created_at, one.operation_id)
                                         > (t.last_account_at, t.last_account_operation_id)) AS newer
                          OFFSET 0) n)
            WHERE t.tenant_id = one.tenant_id AND t.beneficiary_id = one.beneficiary_id;
            EXIT WHEN FOUND;
            INSERT INTO paid_payees (tenant_id, beneficiary_id, payments, last_account_fingerprint,
                                     last_account_at, last_account_operation_id)
            VALUES (one.tenant_id, one.beneficiary_id, 1, one.account_fingerprint,
                    CASE WHEN one.account_fingerprint IS NOT NULL THEN one.created_at END,
                    CASE WHEN one.account_fingerprint IS NOT NULL THEN one.operation_id END)
            ON CONFLICT (tenant_id, beneficiary_id) DO NOTHING;
            EXIT WHEN FOUND;
        END LOOP;

        WHILE one.currency IS NOT NULL AND one.amount_minor IS NOT NULL LOOP
            UPDATE paid_payee_amounts AS t SET
                (latest_at, latest_amounts) = (
                    SELECT m.latest_at, m.latest_amounts
                    FROM fleet_latest_amounts(t.latest_at, t.latest_amounts,
                                              ARRAY[one.created_at], ARRAY[one.amount_minor]) m)
            WHERE t.tenant_id = one.tenant_id AND t.beneficiary_id = one.beneficiary_id
              AND t.currency = one.currency;
            EXIT WHEN FOUND;
            INSERT INTO paid_payee_amounts (tenant_id, beneficiary_id, currency, latest_at, latest_amounts)
            VALUES (one.tenant_id, one.beneficiary_id, one.currency, ARRAY[one.created_at], ARRAY[one.amount_minor])
            ON CONFLICT (tenant_id, beneficiary_id, currency) DO NOTHING;
            EXIT WHEN FOUND;
        END LOOP;

        WHILE one.account_fingerprint IS NOT NULL LOOP
            UPDATE paid_accounts AS t SET payments = t.payments + 1
            WHERE t.tenant_id = one.tenant_id AND t.account_fingerprint = one.account_fingerprint;
            EXIT WHEN FOUND;
            INSERT INTO paid_accounts (tenant_id, account_fingerprint, payments)
            VALUES (one.tenant_id, one.account_fingerprint, 1)
            ON CONFLICT (tenant_id, account_fingerprint) DO NOTHING;
            EXIT WHEN FOUND;
        END LOOP;
        RETURN;
    END IF;

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
            SELECT m.latest_at, m.latest_amounts
            FROM fleet_latest_amounts(t.latest_at, t.latest_amounts,
                                      EXCLUDED.latest_at, EXCLUDED.latest_amounts) m);

    INSERT INTO paid_accounts AS t (tenant_id, account_fingerprint, payments)
    SELECT tenant_id, account_fingerprint, count(*)
    FROM unnest(paid)
    WHERE beneficiary_id IS NOT NULL AND account_fingerprint IS NOT NULL
    GROUP BY 1, 2
    ORDER BY 1, 2
    ON CONFLICT (tenant_id, account_fingerprint) DO UPDATE SET payments = t.payments + EXCLUDED.payments;
END $$;

-- The payments and charges a statement moved to `succeeded`, found in one scan of its
-- transition tables. A statement that settled neither (a claim, a release, a failure)
-- calls nothing.
CREATE FUNCTION operations_count_settled() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    paid paid_payment[];
    charged charged_charge[];
BEGIN
    SELECT array_agg(fleet_paid_payment(n)) FILTER (WHERE n.action = 'payment.create'),
           array_agg(fleet_charged_charge(n)) FILTER (WHERE n.action = 'charge.create')
    INTO paid, charged
    FROM settled_after n JOIN settled_before b USING (operation_id, tenant_id)
    WHERE n.action IN ('payment.create', 'charge.create') AND n.status = 'succeeded'
      AND b.status IS DISTINCT FROM 'succeeded';
    IF paid IS NOT NULL THEN
        PERFORM fleet_count_paid(paid);
    END IF;
    IF charged IS NOT NULL THEN
        PERFORM fleet_count_charged(charged);
    END IF;
    RETURN NULL;
END $$;

-- Swapped in one transaction: no statement on operations passes the lock the first DROP
-- takes until this migration commits, so every success is counted once, by the old
-- triggers or by the new one.
DROP TRIGGER operations_count_paid ON operations;
DROP TRIGGER operations_count_charged ON operations;
CREATE TRIGGER operations_count_settled
    AFTER UPDATE ON operations
    REFERENCING OLD TABLE AS settled_before NEW TABLE AS settled_after
    FOR EACH STATEMENT EXECUTE FUNCTION operations_count_settled();
DROP FUNCTION operations_count_paid();
DROP FUNCTION operations_count_charged();
