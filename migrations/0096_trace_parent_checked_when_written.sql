-- The operation's `trace_parent` rule (0079), checked when the column is written instead
-- of on every update of the row.
--
-- Postgres checks every CHECK constraint of a table on every UPDATE, whatever columns it
-- sets. `operations_trace_parent_w3c` ran three regular expressions each time a
-- compare-and-set moved an operation (the claim, the answer, the approval), although
-- only the intake's insert writes the column: about 2% of Postgres's CPU in a pipeline
-- run. The same rule is now a row trigger for INSERT and for an UPDATE that names the
-- column, so it holds for every row and every role as before (no component may update
-- the column; the owner still cannot store a malformed value), and an update that leaves
-- the column out no longer pays for it.
--
-- A refusal reads as the constraint's did: SQLSTATE 23514 (check_violation) naming
-- `operations_trace_parent_w3c`. The rows already stored were checked by the constraint
-- when written and cannot have changed since without it. The operators are named with
-- their schema, so a caller's search_path cannot put another `~` in their place.

ALTER TABLE operations DROP CONSTRAINT operations_trace_parent_w3c;

CREATE FUNCTION operations_trace_parent_is_w3c() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT (NEW.trace_parent OPERATOR(pg_catalog.~) '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
            AND NEW.trace_parent OPERATOR(pg_catalog.!~) '^00-0{32}-'
            AND NEW.trace_parent OPERATOR(pg_catalog.!~) '^00-[0-9a-f]{32}-0{16}-') THEN
        RAISE EXCEPTION 'new row for relation "operations" violates check constraint "operations_trace_parent_w3c"'
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_trace_parent_w3c',
                  HINT = 'trace_parent is a W3C traceparent of version 00 with non-zero trace and span ids';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER operations_trace_parent_w3c
    BEFORE INSERT OR UPDATE OF trace_parent ON operations
    FOR EACH ROW WHEN (NEW.trace_parent IS NOT NULL)
    EXECUTE FUNCTION operations_trace_parent_is_w3c();
