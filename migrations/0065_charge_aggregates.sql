-- Risk cues of charges (charge.create), judged as a payment's are, in a constant number of
-- reads per intent (docs/policies.md#charge-cues).
--
-- A charge's counterpart is who pays: the customer's saved card (or bank account), whose
-- fingerprint the intake froze as the charge's payer evidence (`operations.payee`, a
-- `sha256:` hash of Stripe's own fingerprint, 0062_charge_create.sql), and the customer
-- (`payload.customer`). The database keeps, per tenant, what the two cues need:
--
-- * `charged_cards`, per card fingerprint: how many charges to it succeeded, for any
--   customer of the tenant ("first charge to this card");
-- * `charged_customer_amounts`, per customer and currency: the amounts of its latest 100
--   succeeded charges in that currency (latest by (created_at, amount), newest first),
--   whose lower median is the customer's usual charge ("amount above 3× usual").
--
-- Kept exactly as the payees' aggregates of 0059_payee_aggregates.sql are, for the same
-- reasons: a statement trigger on `operations` adds every `charge.create` a statement
-- moves to `succeeded`, in that statement's transaction, whoever records it (execute,
-- reconcile, a Stripe event, an operator's resolution, the owner by hand); `succeeded` is
-- final (0054), so each charge counts once. Rows are written in key order so two
-- statements cannot deadlock on them; pages are kept half empty so every rewrite of a row
-- stays on its page (HOT). A trigger of its own, beside `operations_count_paid`: the
-- transition tables of a statement are made once for both, and neither function is
-- redefined when the other action's rules change.
--
-- Only the trigger writes them: the functions run with the owner's rights, no component
-- role may write the tables or call the counting function, and intake (fleet_api,
-- fleet_prepare) may only read them, by primary key.

CREATE TABLE charged_cards (
    tenant_id        text   NOT NULL,
    card_fingerprint text   NOT NULL,
    charges          bigint NOT NULL CONSTRAINT charged_cards_charges_check CHECK (charges > 0),
    PRIMARY KEY (tenant_id, card_fingerprint)
) WITH (fillfactor = 50);

CREATE TABLE charged_customer_amounts (
    tenant_id      text          NOT NULL,
    customer       text          NOT NULL,
    currency       text          NOT NULL,
    -- The latest 100 charges' times and amounts, newest first, side by side.
    latest_at      timestamptz[] NOT NULL,
    latest_amounts bigint[]      NOT NULL,
    PRIMARY KEY (tenant_id, customer, currency),
    CONSTRAINT charged_customer_amounts_latest_check CHECK (
        cardinality(latest_at) = cardinality(latest_amounts)
        AND cardinality(latest_amounts) BETWEEN 1 AND 100)
) WITH (fillfactor = 50);
-- Kept in the row, never moved to the TOAST table (at most 1.6 kB of amounts).
ALTER TABLE charged_customer_amounts ALTER COLUMN latest_at SET STORAGE MAIN,
                                     ALTER COLUMN latest_amounts SET STORAGE MAIN;

GRANT SELECT ON charged_cards, charged_customer_amounts TO fleet_api, fleet_prepare;

-- What the aggregates take of one succeeded charge.
CREATE TYPE charged_charge AS (
    tenant_id        text,
    customer         text,
    card_fingerprint text,
    currency         text,
    amount_minor     bigint,
    created_at       timestamptz
);

-- An operation as a succeeded charge. The card counts only when the intake found it (an
-- unknown payer names no fingerprint); the amount only when it is a plain integer, so that
-- no row, however written, can make the recording of a success fail here.
CREATE FUNCTION fleet_charged_charge(o operations) RETURNS charged_charge LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT ROW(
        o.tenant_id, o.payload ->> 'customer',
        CASE WHEN o.payee ->> 'status' = 'found' THEN o.payee #>> '{account,fingerprint}' END,
        o.payload ->> 'currency',
        CASE WHEN jsonb_typeof(o.payload -> 'amount_minor') = 'number'
                  AND (o.payload ->> 'amount_minor') ~ '^-?[0-9]{1,18}$'
             THEN (o.payload ->> 'amount_minor')::bigint END,
        o.created_at)::charged_charge
$$;

-- Adds `charged` (charges that just succeeded, each once) to the aggregates, in key order.
CREATE FUNCTION fleet_count_charged(charged charged_charge[]) RETURNS void LANGUAGE sql
SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
    INSERT INTO charged_cards AS t (tenant_id, card_fingerprint, charges)
    SELECT tenant_id, card_fingerprint, count(*)
    FROM unnest(charged)
    WHERE card_fingerprint IS NOT NULL
    GROUP BY 1, 2
    ORDER BY 1, 2
    ON CONFLICT (tenant_id, card_fingerprint) DO UPDATE SET charges = t.charges + EXCLUDED.charges;

    INSERT INTO charged_customer_amounts AS t (tenant_id, customer, currency, latest_at, latest_amounts)
    SELECT tenant_id, customer, currency,
           (array_agg(created_at ORDER BY created_at DESC, amount_minor DESC))[1:100],
           (array_agg(amount_minor ORDER BY created_at DESC, amount_minor DESC))[1:100]
    FROM unnest(charged)
    WHERE customer IS NOT NULL AND currency IS NOT NULL AND amount_minor IS NOT NULL
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
    ON CONFLICT (tenant_id, customer, currency) DO UPDATE SET
        (latest_at, latest_amounts) = (
            SELECT array_agg(at ORDER BY at DESC, amount DESC), array_agg(amount ORDER BY at DESC, amount DESC)
            FROM (SELECT at, amount
                  FROM unnest(t.latest_at || EXCLUDED.latest_at, t.latest_amounts || EXCLUDED.latest_amounts)
                       AS u(at, amount)
                  ORDER BY at DESC, amount DESC
                  LIMIT 100) kept);
$$;
REVOKE EXECUTE ON FUNCTION fleet_count_charged(charged_charge[]) FROM PUBLIC;

-- The charges a statement moved to `succeeded`.
CREATE FUNCTION operations_count_charged() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    charged charged_charge[];
BEGIN
    charged := ARRAY(
        SELECT fleet_charged_charge(n)
        FROM charged_after n JOIN charged_before b USING (operation_id, tenant_id)
        WHERE n.action = 'charge.create' AND n.status = 'succeeded'
          AND b.status IS DISTINCT FROM 'succeeded');
    IF cardinality(charged) > 0 THEN
        PERFORM fleet_count_charged(charged);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER operations_count_charged
    AFTER UPDATE ON operations
    REFERENCING OLD TABLE AS charged_before NEW TABLE AS charged_after
    FOR EACH STATEMENT EXECUTE FUNCTION operations_count_charged();

-- The charges that succeeded before this migration. The trigger above is made first: it
-- holds a lock on operations that no writer passes until this transaction commits, so
-- every success is counted exactly once, here or by the trigger.
SELECT fleet_count_charged(ARRAY(
    SELECT fleet_charged_charge(o) FROM operations o
    WHERE o.action = 'charge.create' AND o.status = 'succeeded'));
