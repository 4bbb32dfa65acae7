-- Final is final, held by the database whoever writes.
--
-- Until now only the code kept the operation state table (`fleet_core::state`): a role
-- allowed to update `operations.status` could write any status over any other, so the
-- internet-facing webhook-ingest role could turn a `succeeded` payment into `failed` in
-- plain SQL, and the outbox would tell the agent it failed. Here the database refuses
-- every change of status the state table does not make, whoever connects (the owner
-- included), with a documented SQLSTATE (docs/design.md, "The trust model"):
--
-- * 23514 (check_violation), constraint `operations_status_transition`: the move
--   (old status → new status) is not in `operation_status_moves`. No move leaves
--   `succeeded`, `failed` or `cancelled`: a final outcome stays final;
-- * 23514, constraint `operations_status_by_operator`: the move is one only an operator's
--   decision makes (disputing, ending a dispute, cancelling an accepted or unknown
--   operation) and it is not one: the writer must be the API's role or the owner (the
--   administrator running `fleetctl`), and the same transaction must have written the
--   operator's history row for exactly this move (`kind = 'transition'`, actor
--   `operator:<name>`, from and to statuses), as `fleet_store`'s resolve and dispute do.
--   A worker's role never makes such a move.
--
-- The moves are listed in ONE place, the table below, and nowhere else in SQL. It is
-- `fleet_core::state::status_moves()` written out: every (from, to) with from ≠ to that
-- some event of the transition function makes, `operator_only` when every such event is
-- an operator's decision. A unit test of fleet-core compares this file's rows with that
-- function, and an integration test compares the migrated table with it, so a change of
-- the state table that is not made here too fails both. (A change of the table means a
-- new migration that rewrites these rows.)

CREATE TABLE operation_status_moves (
    from_status   text    NOT NULL,
    to_status     text    NOT NULL,
    operator_only boolean NOT NULL,
    PRIMARY KEY (from_status, to_status),
    CHECK (from_status <> to_status)
);

INSERT INTO operation_status_moves (from_status, to_status, operator_only) VALUES
    ('not_started', 'in_progress', false),
    ('not_started', 'cancelled', false),
    ('not_started', 'disputed', true),
    ('in_progress', 'not_started', false),
    ('in_progress', 'accepted', false),
    ('in_progress', 'unknown', false),
    ('in_progress', 'succeeded', false),
    ('in_progress', 'failed', false),
    ('in_progress', 'cancelled', false),
    ('in_progress', 'disputed', true),
    ('accepted', 'unknown', false),
    ('accepted', 'succeeded', false),
    ('accepted', 'failed', false),
    ('accepted', 'cancelled', true),
    ('accepted', 'disputed', true),
    ('unknown', 'not_started', false),
    ('unknown', 'accepted', false),
    ('unknown', 'succeeded', false),
    ('unknown', 'failed', false),
    ('unknown', 'cancelled', true),
    ('unknown', 'disputed', true),
    ('disputed', 'succeeded', true),
    ('disputed', 'failed', true),
    ('disputed', 'cancelled', true);

-- The trigger runs with the writer's rights, so every role that may write a status reads
-- the table; nobody but the owner writes it.
GRANT SELECT ON operation_status_moves
    TO fleet_api, fleet_prepare, fleet_execute, fleet_reconcile, fleet_webhook_ingest, fleet_relay;

-- Checked after the statement has run to its end (an AFTER trigger), so that the history
-- row the same statement writes (the store moves the row and writes its event in one
-- statement) is seen. Only rows of this transaction count (`xmin`): an old operator row
-- of the same move cannot vouch for a new one. (A history row written in a savepoint
-- carries the savepoint's transaction id and would not count; the store uses none.)
CREATE FUNCTION operations_status_transition() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    by_operator_only boolean;
    component text;
BEGIN
    SELECT m.operator_only INTO by_operator_only
    FROM operation_status_moves m
    WHERE m.from_status = OLD.status AND m.to_status = NEW.status;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'operation %: status % → % is not a move of the state table', OLD.operation_id, OLD.status, NEW.status
            USING ERRCODE = 'check_violation', TABLE = 'operations', CONSTRAINT = 'operations_status_transition',
                  HINT = 'succeeded, failed and cancelled are final; see docs/design.md, the operation state table';
    END IF;
    IF by_operator_only THEN
        component := fleet_component();
        IF NOT ((component IS NULL OR component = 'fleet_api')
                AND EXISTS (SELECT FROM operation_events e
                            WHERE e.operation_id = NEW.operation_id AND e.tenant_id = NEW.tenant_id
                              AND e.kind = 'transition' AND e.actor LIKE 'operator:%'
                              AND e.from_status = OLD.status AND e.to_status = NEW.status
                              AND e.xmin = pg_current_xact_id()::xid)) THEN
            RAISE EXCEPTION 'operation %: status % → % is an operator''s decision, and none was recorded', OLD.operation_id, OLD.status, NEW.status
                USING ERRCODE = 'check_violation', TABLE = 'operations', CONSTRAINT = 'operations_status_by_operator',
                      HINT = 'an operator resolves or disputes through the API or fleetctl, which record the decision';
        END IF;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER operations_status_transition
    AFTER UPDATE ON operations
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION operations_status_transition();
