-- One login role per component, each granted only what that component does. The tables
-- stay owned by whoever runs the migrations; no component runs as their owner or as a
-- superuser, so a compromised or buggy worker is held by the database itself:
--
-- * only fleet_api records approvals and decisions (the approvals table, and the
--   approval columns of operations: approval_status, approved_hash, decided_by,
--   decided_at);
-- * the workers (prepare, execute, reconcile, webhook-ingest) update only the execution
--   columns of operations; the one approval change a worker makes, marking an approval
--   whose window the database clock says has closed as expired, goes through
--   fleet_expire_approval(), which can do nothing else;
-- * the outbox is written by the events trigger (running as the owner), and read and
--   emptied by fleet_relay only;
-- * principals, tokens and console sessions are the API's (and the migrating owner's,
--   for `fleetctl principal` and `fleetctl token`).
--
-- Roles belong to the whole cluster, so several databases (and migrations of them running
-- at once) share them: each is created once, and every grant is per database. Passwords
-- are not set here: `fleetctl migrate` sets the ones it is given (docs/operations.md).

DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['fleet_api', 'fleet_prepare', 'fleet_execute', 'fleet_reconcile',
                             'fleet_webhook_ingest', 'fleet_relay'] LOOP
        BEGIN
            EXECUTE format('CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT', r);
        EXCEPTION
            -- Created earlier, or by a migration of another database at the same moment.
            WHEN duplicate_object OR unique_violation THEN NULL;
        END;
    END LOOP;
END $$;

-- What every writer of events needs: the events trigger reads the operation and writes
-- the outbox with the owner's rights, so no component can write an outbox row itself.
ALTER FUNCTION operation_events_to_outbox() SECURITY DEFINER SET search_path = public, pg_temp;
ALTER FUNCTION operation_events_number() SECURITY DEFINER SET search_path = public, pg_temp;

-- Marks an approval expired, and nothing else: only a pending approval whose window the
-- database clock says has closed, on an operation that never started and was cancelled
-- for it. Reconcile's sweeper calls it in the transaction that cancels the operation.
CREATE FUNCTION fleet_expire_approval(op text) RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    WITH expired AS (
        UPDATE operations SET approval_status = 'expired', updated_at = now()
        WHERE operation_id = op AND approval_status = 'pending'
          AND approval_expires_at <= now() AND status = 'cancelled'
        RETURNING 1
    )
    SELECT EXISTS (SELECT FROM expired)
$$;
REVOKE ALL ON FUNCTION fleet_expire_approval(text) FROM PUBLIC;

-- Nothing is granted to everyone.
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM PUBLIC;

-- Reads: each component reads the operations and their history.
GRANT SELECT ON operations, operation_events, attempts, approvals
    TO fleet_api, fleet_prepare, fleet_execute, fleet_reconcile, fleet_webhook_ingest;

-- The execution columns: what workers change as an operation runs and settles.
GRANT UPDATE (status, status_reason, fence, lease_owner, lease_expires_at, attempts,
              external_id, provider_request_id, result, error_code, deadline_at,
              unknown_since, escalated_at, resolved_at, updated_at, lookup_failures,
              next_lookup_at, audited_at)
    ON operations
    TO fleet_api, fleet_prepare, fleet_execute, fleet_reconcile, fleet_webhook_ingest;
GRANT INSERT ON operation_events
    TO fleet_api, fleet_prepare, fleet_execute, fleet_reconcile, fleet_webhook_ingest;

-- Intake: prepare and the API's intake insert snapshots (immutable once written).
GRANT INSERT ON operations TO fleet_api, fleet_prepare;

-- Decisions: the API alone.
GRANT UPDATE (approval_status, approved_hash, decided_by, decided_at) ON operations TO fleet_api;
GRANT INSERT ON approvals TO fleet_api;

-- Calls to providers: execute starts and completes attempts; reconcile completes the
-- attempt of a lease it expired and makes its own same-key attempts.
GRANT INSERT, UPDATE ON attempts TO fleet_execute, fleet_reconcile;

-- Approval expiry, as above.
GRANT EXECUTE ON FUNCTION fleet_expire_approval(text) TO fleet_reconcile;

-- Provider events: received, deduplicated, applied and pruned by webhook-ingest;
-- reconcile applies the events that arrived before their operation could be linked.
GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_events TO fleet_webhook_ingest;
GRANT SELECT, UPDATE ON webhook_events TO fleet_reconcile;

-- The outbox: published, marked and pruned by the relay.
GRANT SELECT, UPDATE, DELETE ON operation_outbox TO fleet_relay;

-- People and their credentials: the API authenticates them and keeps console sessions.
GRANT SELECT ON principals, principal_tenants, api_tokens TO fleet_api;
GRANT SELECT, INSERT, DELETE ON console_sessions TO fleet_api;
