-- The rule functions of the hot path, compiled once per connection instead of planned per
-- call (the reason 0030 gave for the outcome-event functions, which later functions did not
-- follow).
--
-- A SQL-language function that is SECURITY DEFINER, or carries a SET clause, is never
-- inlined, and Postgres keeps no plan of it beyond one executor run: every statement (and
-- every trigger firing, and every row of a function scan) that calls one parses and plans
-- its body again. `fleet_quorum_count` joins five tables; it was planned again for every
-- outcome event of every operation (`operation_view` counts the approvals), for the move to
-- approved, for each approval recorded, and for each row a claim takes (through
-- `fleet_quorum_met`). The intake's statements and the insert trigger planned
-- `fleet_policy_in_force` again per intent, the author check of each approver's history row
-- `fleet_approval_recorded`, and each recorded success of a payment the two statements of
-- `fleet_count_paid`. In PL/pgSQL the same statements are planned once per connection.
--
-- What each returns is unchanged, value for value: the same statements, the same rights
-- (SECURITY DEFINER and search_path as before; CREATE OR REPLACE keeps the owner and the
-- grants), the same volatility. A scalar taken with SELECT … INTO keeps the SQL function's
-- answer for no row (NULL) and for several (the first). Whoever changes one of these again
-- keeps it in PL/pgSQL.

CREATE OR REPLACE FUNCTION fleet_quorum_count(op text, tenant text, OUT counted bigint, OUT signed bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    SELECT count(*),
           count(*) FILTER (WHERE a.signature IS NOT NULL AND EXISTS (
               SELECT FROM approver_keys k
               WHERE k.key_id = a.key_id AND k.principal = a.principal
                 AND k.registered_at < a.at AND k.removed_at IS NULL))
    INTO counted, signed
    FROM operations o
    JOIN approvals a ON a.operation_id = o.operation_id AND a.tenant_id = o.tenant_id
    JOIN principals pr ON pr.name = a.principal
    JOIN principal_tenants pt ON pt.principal = a.principal AND pt.tenant_id = o.tenant_id
    WHERE o.operation_id = op AND o.tenant_id = tenant
      AND a.payload_hash = o.payload_hash AND a.voided_at IS NULL
      AND a.principal IS DISTINCT FROM o.submitted_by
      AND pr.removed_at IS NULL AND pr.role = 'approver' AND pt.granted_at <= a.at;
END $$;

CREATE OR REPLACE FUNCTION fleet_quorum_met(op text, tenant text) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    met boolean;
BEGIN
    SELECT q.counted >= o.approvals_required AND q.signed >= o.signatures_required
    INTO met
    FROM operations o, fleet_quorum_count(o.operation_id, o.tenant_id) q
    WHERE o.operation_id = op AND o.tenant_id = tenant;
    RETURN met;
END $$;

CREATE OR REPLACE FUNCTION fleet_approval_recorded(op text, tenant text, p text) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    RETURN EXISTS (SELECT FROM approvals a JOIN operations o USING (operation_id, tenant_id)
                   WHERE a.operation_id = op AND a.tenant_id = tenant AND a.principal = p
                     AND a.payload_hash = o.payload_hash);
END $$;

CREATE OR REPLACE FUNCTION fleet_principal_exists(p text) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    RETURN EXISTS (SELECT FROM principals WHERE name = p AND removed_at IS NULL);
END $$;

CREATE OR REPLACE FUNCTION fleet_may_submit(p text, tenant text) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    RETURN EXISTS (SELECT FROM principals pr JOIN principal_tenants pt ON pt.principal = pr.name
                   WHERE pr.name = p AND pr.role = 'agent' AND pr.removed_at IS NULL
                     AND pt.tenant_id = tenant);
END $$;

CREATE OR REPLACE FUNCTION fleet_policy_in_force(tenant text, act text) RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    version text;
BEGIN
    SELECT COALESCE(
        (SELECT policy_version FROM policy_assignments WHERE tenant_id = tenant AND action = act),
        (SELECT policy_version FROM policy_defaults WHERE action = act))
    INTO version;
    RETURN version;
END $$;

CREATE OR REPLACE FUNCTION fleet_live_approver_since(p text, tenant text) RETURNS timestamptz
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    since timestamptz;
BEGIN
    SELECT pt.granted_at INTO since
    FROM principals pr JOIN principal_tenants pt ON pt.principal = pr.name
    WHERE pr.name = p AND pr.removed_at IS NULL AND pr.role = 'approver' AND pt.tenant_id = tenant;
    RETURN since;
END $$;

CREATE OR REPLACE FUNCTION fleet_approver_standing(p text, tenant text,
                                                   OUT role text, OUT removed boolean, OUT granted_at timestamptz)
RETURNS SETOF record LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    RETURN QUERY
    SELECT pr.role, pr.removed_at IS NOT NULL, pt.granted_at
    FROM principals pr
    LEFT JOIN principal_tenants pt ON pt.principal = pr.name AND pt.tenant_id = tenant
    WHERE pr.name = p;
END $$;

CREATE OR REPLACE FUNCTION fleet_mandate_holds(op text, tenant text) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    RETURN EXISTS (SELECT FROM mandate_uses u JOIN mandates m USING (mandate_id)
                   WHERE u.operation_id = op AND u.tenant_id = tenant
                     AND u.released_at IS NULL AND m.revoked_at IS NULL);
END $$;

CREATE OR REPLACE FUNCTION fleet_paid_payment(o operations) RETURNS paid_payment LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    RETURN ROW(
        o.tenant_id, o.operation_id, o.payload ->> 'beneficiary_id',
        o.payee #>> '{account,fingerprint}', o.payload ->> 'currency',
        CASE WHEN jsonb_typeof(o.payload -> 'amount_minor') = 'number'
                  AND (o.payload ->> 'amount_minor') ~ '^-?[0-9]{1,18}$'
             THEN (o.payload ->> 'amount_minor')::bigint END,
        o.created_at)::paid_payment;
END $$;

CREATE OR REPLACE FUNCTION fleet_count_paid(paid paid_payment[]) RETURNS void LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
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
END $$;
