-- The pending operations a standing mandate could approve now, rung for execute by
-- reconcile's sweeper: an intent that arrived through the queue after its mandate was
-- stored gets no other doorbell (prepare rings nothing; the API rings the operations
-- pending when a mandate is stored).
--
-- `fleet_mandate_due` returns at most `lim` of them, each at most once per `waited`
-- seconds (it marks them, `updated_at`, as the stranded-approved sweep does), among the
-- tenants with an active mandate that has budget and count left, and only those the
-- mandate covers and the policy lets a mandate approve, with an amount that still fits
-- what is left. Whether one is approved is still `fleet_mandate_approve`'s to decide, at
-- claim. With the owner's rights: reconcile reads no mandates.

CREATE FUNCTION fleet_mandate_due(lim integer, waited double precision)
RETURNS TABLE (operation_id text, tenant_id text)
LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    UPDATE operations SET updated_at = now()
    WHERE (operation_id, tenant_id) IN (
        SELECT o.operation_id, o.tenant_id
        FROM mandates m JOIN operations o ON o.tenant_id = m.tenant_id
        WHERE m.revoked_at IS NULL AND m.valid_from <= now() AND m.valid_until > now()
          AND m.used_count < m.count_limit AND m.spent_minor < m.budget_minor
          AND o.status = 'not_started' AND o.approval_status = 'pending'
          AND o.approval_expires_at > now() AND o.escalated_at IS NULL
          AND o.updated_at <= now() - make_interval(secs => waited)
          AND fleet_mandate_covers(m, o)
          AND (o.payload ->> 'amount_minor')::numeric <= m.budget_minor - m.spent_minor
          AND fleet_mandate_may_approve(o)
        ORDER BY o.created_at, o.operation_id
        LIMIT lim
        FOR UPDATE OF o SKIP LOCKED)
    RETURNING operation_id, tenant_id
$$;
REVOKE ALL ON FUNCTION fleet_mandate_due(integer, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet_mandate_due(integer, double precision) TO fleet_reconcile;
