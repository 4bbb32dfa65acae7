-- Each component may write exactly the columns its code writes.
--
-- The grants of the component roles were per table for inserts (a role that may insert an
-- operation could write any column of it, its approval and status included) and for the
-- rows of attempts, webhooks and sessions. Here every INSERT and UPDATE grant is
-- replaced by one that names its columns; reads are unchanged. A test walks every role ×
-- table × column against the same list (`tests/fleet-tests/tests/db_roles.rs`), and
-- docs/operations.md ("Database roles") tells what each component writes and why.
--
-- (Revoking a table's privilege also revokes it on each of its columns, so what follows
-- starts from nothing written.)

REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON ALL TABLES IN SCHEMA public
    FROM fleet_api, fleet_prepare, fleet_execute, fleet_reconcile, fleet_webhook_ingest, fleet_relay;

-- Intake (prepare, and the API's intake running the same code): the snapshot and the
-- inputs of its approval. Status, approval, lease and outcome take their defaults; the
-- database refuses any other first state.
GRANT INSERT (operation_id, tenant_id, action, provider, target, supersedes, rationale, payload,
              payload_hash, policy_version, data_version, idempotency_key, approval_expires_at,
              submitted_by, approvals_required)
    ON operations TO fleet_api, fleet_prepare;

-- A status change (the one transition statement every component uses, see
-- `shared/store/src/transition.rs`): what the row says about its execution.
GRANT UPDATE (status, status_reason, external_id, provider_request_id, result, error_code,
              deadline_at, unknown_since, escalated_at, resolved_at, lease_owner,
              lease_expires_at, updated_at)
    ON operations TO fleet_api, fleet_prepare, fleet_execute, fleet_reconcile, fleet_webhook_ingest;

-- The claim: the fence and the count of attempts.
GRANT UPDATE (fence, attempts) ON operations TO fleet_execute;

-- Reconciliation's bookkeeping: lookups and the post-settlement audit.
GRANT UPDATE (lookup_failures, next_lookup_at, audited_at) ON operations TO fleet_reconcile;

-- Decisions: the API alone.
GRANT UPDATE (approval_status, approved_hash, decided_by, decided_at) ON operations TO fleet_api;
GRANT INSERT (operation_id, principal, signed_in_with, payload_hash) ON approvals TO fleet_api;

-- History: every component that changes an operation writes its row (which kinds, by
-- which actor, the database checks per role; how a person signed in, only the API).
GRANT INSERT (operation_id, kind, from_status, to_status, fence, actor, reason, evidence, signed_in_with)
    ON operation_events TO fleet_api, fleet_prepare, fleet_execute, fleet_reconcile, fleet_webhook_ingest;

-- Calls to providers: execute writes the attempt row of its claim before the call and
-- completes it; reconcile completes the attempt of a lease it expired.
GRANT INSERT (operation_id, fence, worker) ON attempts TO fleet_execute;
GRANT UPDATE (finished_at, outcome, http_status, replayed, external_id, provider_request_id, response, detail)
    ON attempts TO fleet_execute, fleet_reconcile;

-- Provider events: received, deduplicated, applied and pruned by webhook-ingest;
-- reconcile applies the events that arrived before their operation could be linked.
GRANT INSERT (provider, event_id, event_type, received_at, payload_hash, reference, object_id, object)
    ON webhook_events TO fleet_webhook_ingest;
GRANT UPDATE (operation_id, outcome, applied_at) ON webhook_events TO fleet_webhook_ingest, fleet_reconcile;
GRANT DELETE ON webhook_events TO fleet_webhook_ingest;

-- The outbox: marked published and pruned by the relay.
GRANT UPDATE (published_at) ON operation_outbox TO fleet_relay;
GRANT DELETE ON operation_outbox TO fleet_relay;

-- Console sessions: started and ended by the API.
GRANT INSERT (session_hash, principal, signed_in_with, expires_at, role, tenants) ON console_sessions TO fleet_api;
GRANT DELETE ON console_sessions TO fleet_api;
