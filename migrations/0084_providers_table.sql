-- The providers fleet knows, as a table the operations reference, rather than a list of
-- names restated in SQL. Until now each provider's name was written into the insert check
-- of operations (`operations_snapshot_is_valid`, 0033, 0040, 0062), so adding a provider
-- took a migration. Now:
--
-- * `providers` holds one row per provider name. `fleetctl migrate` writes the names of
--   the catalogue's provider specs (`fleet_core::catalogue::provider_spec::PROVIDERS`)
--   into it after applying the migrations, every time it runs (`fleet_store::migrate`):
--   a provider added to the catalogue is known to the database at the next migrate, with
--   no migration of its own.
-- * `operations.provider` references it (`operations_provider_fkey`): an operation naming
--   a provider that has no row is refused whoever writes it, as the insert check did.
-- * Only the owner writes `providers` (the one who migrates). The components may read it;
--   none may insert, change or remove a name, so no component can make the database
--   accept a provider the catalogue does not have. The reference is checked with the
--   owner's rights, so the components need nothing more to insert an operation.
-- * The insert check keeps its other rules; its provider line is gone (the reference
--   replaces it). `operations_snapshot_is_valid` below is 0062's with that line removed.
--
-- Every provider already named by an operation was admitted by the check, so those names
-- are the table's first rows; `fleetctl migrate` adds the catalogue's right after.

CREATE TABLE providers (
    name text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]*$')
);

INSERT INTO providers (name) SELECT DISTINCT provider FROM operations;

REVOKE ALL ON providers FROM PUBLIC;
GRANT SELECT ON providers TO fleet_api, fleet_prepare, fleet_execute, fleet_reconcile,
                             fleet_webhook_ingest, fleet_relay;

ALTER TABLE operations ADD CONSTRAINT operations_provider_fkey
    FOREIGN KEY (provider) REFERENCES providers (name);

CREATE OR REPLACE FUNCTION operations_snapshot_is_valid() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    violated text;
BEGIN
    -- As for a CHECK constraint, NULL passes here; the columns' NOT NULL refuses it.
    IF NEW.operation_id !~ '^op_[0-7][0-9A-HJKMNP-TV-Z]{25}$' THEN
        violated := 'operations_operation_id_check';
    ELSIF NEW.action NOT IN ('payment.create', 'refund.create', 'crm.deal.create', 'crm.deal.update',
                             'order.status.change', 'contract.send', 'charge.create') THEN
        violated := 'operations_action_check';
    ELSIF NEW.payload_hash !~ '^sha256:[0-9a-f]{64}$' THEN
        violated := 'operations_payload_hash_check';
    ELSIF NEW.approvals_required NOT BETWEEN 1 AND 10 THEN
        violated := 'operations_approvals_required_check';
    ELSIF NEW.status <> 'not_started' OR NEW.approval_status <> 'pending'
       OR NEW.approved_hash IS NOT NULL OR NEW.decided_by IS NOT NULL OR NEW.decided_at IS NOT NULL
       OR NEW.status_reason IS NOT NULL OR NEW.fence <> 0 OR NEW.lease_owner IS NOT NULL
       OR NEW.lease_expires_at IS NOT NULL OR NEW.attempts <> 0 OR NEW.external_id IS NOT NULL
       OR NEW.provider_request_id IS NOT NULL OR NEW.result IS NOT NULL OR NEW.error_code IS NOT NULL
       OR NEW.deadline_at IS NOT NULL OR NEW.unknown_since IS NOT NULL OR NEW.escalated_at IS NOT NULL
       OR NEW.resolved_at IS NOT NULL OR NEW.audited_at IS NOT NULL OR NEW.lookup_failures <> 0
       OR NEW.next_lookup_at IS NOT NULL THEN
        violated := 'operations_inserted_pending';
    END IF;
    IF violated = 'operations_inserted_pending' THEN
        RAISE EXCEPTION 'new row for relation "operations" violates check constraint "%"', violated
            USING ERRCODE = 'check_violation', TABLE = 'operations', CONSTRAINT = violated,
                  HINT = 'an operation is inserted not_started and pending; approvals decide the rest';
    ELSIF violated IS NOT NULL THEN
        RAISE EXCEPTION 'new row for relation "operations" violates check constraint "%"', violated
            USING ERRCODE = 'check_violation', TABLE = 'operations', CONSTRAINT = violated;
    END IF;
    RETURN NEW;
END $$;
