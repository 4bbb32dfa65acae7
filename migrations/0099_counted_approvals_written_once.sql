-- Which approvals count is written once: one SQL function returns them, and every count
-- of approvals (how many, how many signed at all, how many signed by a live key) is taken
-- from it.
--
-- Until now `fleet_approvals_counted` (0098) and the second query of `fleet_quorum_count`
-- each wrote out the same conditions: an approval of the stored hash, not void, not the
-- submitter's, by a principal that is a live approver granted the tenant no later than the
-- approval. Two copies of one rule can drift apart; a change to who counts would have had
-- to be made twice, and a change made once would have counted signatures of approvals
-- that no longer count (or the reverse).
--
-- `fleet_counted_approvals(op, tenant)` now returns the approvals that count, one row
-- each, with the columns the signature rule needs. It is a SQL function, not SECURITY
-- DEFINER and with no SET clause, so Postgres writes its query into the query that calls
-- it, as it does for `fleet_approvals_counted`; inlining nests, so the outbox statement
-- that reads the count per event still plans index lookups by the operation's key.
-- - `fleet_approvals_counted` counts its rows and those that carry a signature;
-- - `fleet_quorum_count` takes those two, and when some counted approval is signed, counts
--   the rows whose signature is by a key of the approver registered before the approval
--   and not removed (the key read by its primary key, as before).
-- The answers are unchanged, value for value; the tables are named with their schema
-- because an inlined body is read under its caller's search path; only the owner's
-- functions may call it.

CREATE FUNCTION fleet_counted_approvals(op text, tenant text)
RETURNS TABLE (principal text, key_id text, signature bytea, at timestamptz)
LANGUAGE sql STABLE AS $$
    -- The approvals that count: of the stored hash, not void, not the submitter's, each by
    -- a live approver of the tenant granted it no later than the approval.
    SELECT a.principal, a.key_id, a.signature, a.at
    FROM public.operations o
    JOIN public.approvals a ON a.operation_id = o.operation_id AND a.tenant_id = o.tenant_id
    JOIN public.principals pr ON pr.name = a.principal
    JOIN public.principal_tenants pt ON pt.principal = a.principal AND pt.tenant_id = o.tenant_id
    WHERE o.operation_id = op AND o.tenant_id = tenant
      AND a.payload_hash = o.payload_hash AND a.voided_at IS NULL
      AND a.principal IS DISTINCT FROM o.submitted_by
      AND pr.removed_at IS NULL AND pr.role = 'approver' AND pt.granted_at <= a.at
$$;
REVOKE ALL ON FUNCTION fleet_counted_approvals(text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION fleet_approvals_counted(op text, tenant text)
RETURNS TABLE (counted bigint, signed_any bigint) LANGUAGE sql STABLE AS $$
    -- How many approvals count, and how many of those carry a signature at all.
    SELECT count(*), count(*) FILTER (WHERE c.signature IS NOT NULL)
    FROM public.fleet_counted_approvals(op, tenant) c
$$;

CREATE OR REPLACE FUNCTION fleet_quorum_count(op text, tenant text, OUT counted bigint, OUT signed bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    -- `signed` holds, for now, how many counted approvals carry a signature at all.
    SELECT c.counted, c.signed_any INTO counted, signed FROM fleet_approvals_counted(op, tenant) c;
    IF signed > 0 THEN
        -- Of those, the ones signed with a key of their approver's registered before the
        -- approval and not removed.
        SELECT count(*) INTO signed
        FROM fleet_counted_approvals(op, tenant) c
        JOIN approver_keys k ON k.key_id = c.key_id
        WHERE c.signature IS NOT NULL
          AND k.principal = c.principal AND k.registered_at < c.at AND k.removed_at IS NULL;
    END IF;
END $$;
