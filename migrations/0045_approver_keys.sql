-- Approvals signed by the approver's own key.
--
-- An approver may register Ed25519 public keys (`fleetctl key add`, as the owner of the
-- schema: no component role writes this table). For an operation whose quorum policy asks
-- for signed approvals, each counted approval carries a signature, made on the approver's
-- machine, over a statement of what they approve (`fleet_core::approval_statement`); the
-- API checks it before recording it, the database refuses to mark the operation approved
-- without enough of them, and fleet-execute verifies every one again right before it calls
-- the provider. A compromised API (or its database role) can write approvals rows, but it
-- holds no approver's private key, so it cannot make one that execute accepts.

-- The registered keys, removed ones included: the table is its own audit. A row is never
-- deleted and never changed, except once, to record its removal (when and by whom).
CREATE TABLE approver_keys (
    -- 'ed25519:' + the first 32 hex digits of the SHA-256 of the public key
    -- (`fleet_core::KeyId`): a signer knows its key id from its key alone, and a key, once
    -- registered (and even once removed), can never be registered again.
    key_id        text PRIMARY KEY CHECK (key_id ~ '^ed25519:[0-9a-f]{32}$'),
    principal     text NOT NULL REFERENCES principals (name),
    algorithm     text NOT NULL CHECK (algorithm = 'ed25519'),
    public_key    bytea NOT NULL UNIQUE CHECK (octet_length(public_key) = 32),
    registered_at timestamptz NOT NULL DEFAULT now(),
    -- The administrator who registered it, as they named themselves, and the database
    -- user that ran the statement (not the client's to choose).
    registered_by text NOT NULL CHECK (length(registered_by) BETWEEN 1 AND 256),
    registered_as text NOT NULL DEFAULT session_user,
    removed_at    timestamptz,
    removed_by    text CHECK (length(removed_by) BETWEEN 1 AND 256),
    removed_as    text,
    CONSTRAINT approver_keys_removal_recorded
        CHECK ((removed_at IS NULL) = (removed_by IS NULL) AND (removed_at IS NULL) = (removed_as IS NULL))
);
CREATE INDEX approver_keys_principal ON approver_keys (principal);

-- Only a removal may change a row: removed_at, removed_by and removed_as set once, from
-- nothing, and nothing else touched. A key is never deleted: the approvals it signed cite
-- it, and an operator reading the history must see whose key it was and when it stopped
-- counting.
CREATE FUNCTION approver_keys_only_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'UPDATE'
    OR OLD.removed_at IS NOT NULL
    OR NEW.key_id        IS DISTINCT FROM OLD.key_id
    OR NEW.principal     IS DISTINCT FROM OLD.principal
    OR NEW.algorithm     IS DISTINCT FROM OLD.algorithm
    OR NEW.public_key    IS DISTINCT FROM OLD.public_key
    OR NEW.registered_at IS DISTINCT FROM OLD.registered_at
    OR NEW.registered_by IS DISTINCT FROM OLD.registered_by
    OR NEW.registered_as IS DISTINCT FROM OLD.registered_as THEN
        RAISE EXCEPTION 'approver_keys: a key is only ever removed, once (% refused)', TG_OP
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER approver_keys_append_only
    BEFORE UPDATE OR DELETE ON approver_keys
    FOR EACH ROW EXECUTE FUNCTION approver_keys_only_removed();
CREATE TRIGGER approver_keys_no_truncate
    BEFORE TRUNCATE ON approver_keys
    FOR EACH STATEMENT EXECUTE FUNCTION approver_keys_only_removed();

-- What a signed approval carries: the key, the signature (64 bytes) and the expiry of the
-- statement signed. All three or none: an unsigned approval is still an approval where
-- the operation's policy asks for no signature.
ALTER TABLE approvals
    ADD COLUMN key_id text REFERENCES approver_keys (key_id),
    ADD COLUMN signature bytea CHECK (octet_length(signature) = 64),
    ADD COLUMN signed_expires_at timestamptz,
    ADD CONSTRAINT approvals_signed_together
        CHECK ((key_id IS NULL) = (signature IS NULL) AND (key_id IS NULL) = (signed_expires_at IS NULL));

-- How many of the operation's approvals must be signed: fixed at intake from its quorum
-- policy, like approvals_required. No CHECK constraint (Postgres would evaluate it on
-- every compare-and-set of the row, see 0033): its range is checked once, at insert, and
-- no update may change it.
ALTER TABLE operations ADD COLUMN signatures_required smallint NOT NULL DEFAULT 0;

CREATE FUNCTION operations_signatures_required_is_valid() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.signatures_required NOT BETWEEN 0 AND NEW.approvals_required THEN
        RAISE EXCEPTION 'new row for relation "operations" violates check constraint "%"',
                        'operations_signatures_required_check'
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_signatures_required_check';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER operations_signatures_required_valid
    BEFORE INSERT ON operations
    FOR EACH ROW EXECUTE FUNCTION operations_signatures_required_is_valid();

-- Lowering it would let unsigned approvals through: as immutable as the snapshot.
CREATE FUNCTION operations_signatures_required_is_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.signatures_required IS DISTINCT FROM OLD.signatures_required THEN
        RAISE EXCEPTION 'the signatures_required of operation % is immutable', OLD.operation_id
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'a changed intent is a new operation that supersedes this one';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER operations_signatures_required_immutable
    BEFORE UPDATE OF signatures_required ON operations
    FOR EACH ROW EXECUTE FUNCTION operations_signatures_required_is_immutable();

-- An operation becomes approved only with at least signatures_required distinct
-- approvals of its stored hash that carry a signature by a key registered for that
-- approval's principal before the approval, and not removed. The database cannot check
-- an Ed25519 signature itself; fleet-execute does, before any call. What this rule adds
-- is that no approvals row without a registered key's signature (an unsigned one, or one
-- naming another principal's key or a removed one) can make an operation approved.
--
-- Runs after the statement that approves, so it sees the approvals that statement
-- inserted. With the owner's rights: the rule does not depend on what the caller may read.
-- Refused with SQLSTATE 23514 (check_violation) and the constraint name
-- operations_signed_approvals_check; the whole statement is rolled back.
CREATE FUNCTION operations_signed_approvals_suffice() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    signed bigint;
BEGIN
    IF NEW.signatures_required = 0 THEN
        RETURN NULL;
    END IF;
    SELECT count(DISTINCT a.principal) INTO signed
    FROM approvals a JOIN approver_keys k ON k.key_id = a.key_id
    WHERE a.operation_id = NEW.operation_id AND a.payload_hash = NEW.payload_hash
      AND a.signature IS NOT NULL AND k.principal = a.principal
      AND k.registered_at < a.at AND k.removed_at IS NULL;
    IF signed < NEW.signatures_required THEN
        RAISE EXCEPTION 'operation % needs % signed approvals of its hash to be approved; it has %',
                        NEW.operation_id, NEW.signatures_required, signed
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_signed_approvals_check';
    END IF;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION operations_signed_approvals_suffice() FROM PUBLIC;

CREATE TRIGGER operations_signed_approvals_gate
    AFTER UPDATE OF approval_status ON operations
    FOR EACH ROW
    WHEN (NEW.approval_status = 'approved' AND OLD.approval_status <> 'approved')
    EXECUTE FUNCTION operations_signed_approvals_suffice();

-- Grants (roles as in 0015). The API reads keys to check a signature before recording it;
-- execute reads keys and approvals to verify them before its call. Nobody but the owner
-- (fleetctl key) writes approver_keys.
GRANT SELECT ON approver_keys TO fleet_api, fleet_execute;
GRANT SELECT ON approvals TO fleet_execute;

-- The API inserts approvals naming only what the approver gave: when an approval was
-- recorded is the database clock's (the column's default), never the writer's, since a
-- key counts only for approvals recorded after it was registered.
REVOKE INSERT ON approvals FROM fleet_api;
GRANT INSERT (operation_id, principal, signed_in_with, payload_hash, key_id, signature, signed_expires_at)
    ON approvals TO fleet_api;

-- Intake fixes how many signed approvals the operation needs, with the rest of the
-- snapshot (the intake's grants are per column).
GRANT INSERT (signatures_required) ON operations TO fleet_api, fleet_prepare;
