-- Who may write which history rows (0040, 0050), checked once for each statement instead
-- of once for each row.
--
-- The rule ran as a BEFORE row trigger: for every history row a PL/pgSQL call, and in it
-- `fleet_component()`, two catalogue queries with an executor each. Execute records a
-- batch of claims or answers per statement and prepare a batch of intents, so a
-- statement of 26 rows asked 26 times which role was writing. The same rule is now an
-- AFTER INSERT trigger for each statement: it asks once, then reads the statement's new
-- rows from its transition table with one query and refuses the statement if any row is
-- not the writer's to write.
--
-- What is refused is the same, row for row:
-- - the same rule for each (component, actor, kind, reason, signed_in_with), written here
--   as the row function wrote it;
-- - the same refusal: SQLSTATE 42501 (insufficient_privilege), table `operation_events`,
--   the same message, naming the first refused row in the order the statement inserted
--   them;
-- - nothing of a refused statement stays: the error aborts the statement and its
--   transaction, as the row trigger's did. The statement's other AFTER triggers fire
--   in name order, so the outbox trigger (`operation_events_outbox`) comes after this one
--   and never writes an event for a refused statement.
-- A person's row is still checked against the approvals and principals as the statement
-- left them, within the writer's own transaction, as before.
--
-- One thing happens earlier than before: the numbering trigger (BEFORE, for each row)
-- now runs for a row this check will refuse, taking its operation's row lock until the
-- writer's transaction ends. That gives no role anything new: every role that may insert
-- history (api, prepare, execute, reconcile, webhook-ingest) may update columns of
-- `operations`, and so may take that lock with a SELECT … FOR NO KEY UPDATE of its own.

CREATE OR REPLACE FUNCTION operation_events_author_is_allowed() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    component text := fleet_component();
    refused record;
BEGIN
    IF component IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT h.kind, h.actor INTO refused
    FROM (SELECT r.*, substring(r.actor FROM '^(?:approver|operator):(.+)$') AS person
          FROM new_history r) h
    WHERE NOT (COALESCE(CASE component
            WHEN 'fleet_prepare' THEN
                h.actor = 'prepare' AND h.kind IN ('prepared', 'transition')
            WHEN 'fleet_api' THEN
                (h.actor = 'prepare' AND h.kind IN ('prepared', 'transition'))
                OR (h.actor = 'approver' AND h.kind = 'approval_expired')
                OR (h.actor LIKE 'approver:%' AND h.kind IN ('approved', 'approval_recorded')
                    AND fleet_approval_recorded(h.operation_id, h.tenant_id, h.person))
                OR (h.actor LIKE 'approver:%' AND h.kind = 'transition' AND h.reason = 'approval_rejected'
                    AND fleet_principal_exists(h.person))
                OR (h.actor LIKE 'operator:%' AND h.kind IN ('transition', 'escalated')
                    AND fleet_principal_exists(h.person))
            WHEN 'fleet_execute' THEN
                h.actor = 'execute' AND h.kind IN ('transition', 'escalated')
            WHEN 'fleet_reconcile' THEN
                (h.actor = 'reconcile'
                 AND h.kind IN ('transition', 'escalated', 'lookup', 'audited', 'approval_expired'))
                OR (h.actor = 'webhook-ingest' AND h.kind IN ('transition', 'webhook_conflict', 'escalated'))
            WHEN 'fleet_webhook_ingest' THEN
                h.actor = 'webhook-ingest' AND h.kind IN ('transition', 'webhook_conflict', 'escalated')
            ELSE false
        END, false)
        -- How a person signed in is the API's to say, and only of a person's row.
        AND (h.signed_in_with IS NULL OR (component = 'fleet_api' AND h.person IS NOT NULL)))
    ORDER BY h.id
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'the % role may not write a history row of kind % by %', component, refused.kind, refused.actor
            USING ERRCODE = 'insufficient_privilege', TABLE = 'operation_events';
    END IF;
    RETURN NULL;
END $$;

DROP TRIGGER operation_events_author_is_allowed ON operation_events;
CREATE TRIGGER operation_events_author_is_allowed AFTER INSERT ON operation_events
    REFERENCING NEW TABLE AS new_history
    FOR EACH STATEMENT EXECUTE FUNCTION operation_events_author_is_allowed();
