-- Every key's registration signed by whoever vouched for it, and the chain of those
-- signatures in the evidence bundle's records.
--
-- 1. A key row carries the statement its registrar signed (`registration`,
--    `fleet.key-registration.v1`, `fleet_core::key_registration`), the signature
--    (`registration_signature`, Ed25519, 64 bytes) and the registrar's key id
--    (`registrar_key_id`). The registrar is either an administrator, with their own
--    registered, not removed Ed25519 key, or, for an administrator's key only, the
--    deployment's evidence key (the root of the chain; its public key is in the
--    statement). The database cannot verify a signature: `fleetctl key add | accept`
--    verifies before it writes, and `fleetctl verify` and the Python verifier check every
--    signature of the chain offline. What the database does refuse, whoever writes
--    (`approver_keys_registration_signed`, SQLSTATE 23514 check_violation): a row without
--    the three, a statement that does not describe the row it is stored with (principal,
--    their role, key id, algorithm, public key, passkey scope, time, `registered_by`,
--    registrar), a registrar that is not an administrator's live Ed25519 key, and a root
--    registration of anything but an administrator's Ed25519 key.
-- 2. Keys registered before this migration have no signed registration: they are kept,
--    marked `registration_legacy`, and a bundle says so of them. No row is written
--    legacy from now on.
-- 3. Administrators may hold keys (to sign registrations); only an approver's key signs
--    approvals, as before (the approval routes are an approver's).
-- 4. `fleet_key_evidence(key_id)`: a key as a bundle carries it, with its signed
--    registration and, nested, its registrar's key with its own, down to the root.
--    `fleet_operation_evidence` gives it for every approval's key and every mandate's.

ALTER TABLE approver_keys
    ADD COLUMN registration_legacy boolean NOT NULL DEFAULT true,
    ADD COLUMN registration jsonb,
    ADD COLUMN registration_signature bytea CHECK (octet_length(registration_signature) = 64),
    ADD COLUMN registrar_key_id text;
ALTER TABLE approver_keys
    ALTER COLUMN registration_legacy SET DEFAULT false,
    ADD CONSTRAINT approver_keys_registration_recorded CHECK (
        registration_legacy
        OR (registration IS NOT NULL AND registration_signature IS NOT NULL AND registrar_key_id IS NOT NULL));

-- A key's row changes once, to record its removal; its registration never.
CREATE OR REPLACE FUNCTION approver_keys_only_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'UPDATE'
    OR OLD.removed_at IS NOT NULL
    OR NEW.key_id        IS DISTINCT FROM OLD.key_id
    OR NEW.principal     IS DISTINCT FROM OLD.principal
    OR NEW.algorithm     IS DISTINCT FROM OLD.algorithm
    OR NEW.public_key    IS DISTINCT FROM OLD.public_key
    OR NEW.credential_id IS DISTINCT FROM OLD.credential_id
    OR NEW.rp_id         IS DISTINCT FROM OLD.rp_id
    OR NEW.origin        IS DISTINCT FROM OLD.origin
    OR NEW.registered_at IS DISTINCT FROM OLD.registered_at
    OR NEW.registered_by IS DISTINCT FROM OLD.registered_by
    OR NEW.registered_as IS DISTINCT FROM OLD.registered_as
    OR NEW.registration_legacy    IS DISTINCT FROM OLD.registration_legacy
    OR NEW.registration           IS DISTINCT FROM OLD.registration
    OR NEW.registration_signature IS DISTINCT FROM OLD.registration_signature
    OR NEW.registrar_key_id       IS DISTINCT FROM OLD.registrar_key_id THEN
        RAISE EXCEPTION 'approver_keys: a key is only ever removed, once (% refused)', TG_OP
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END $$;

-- Bytes as the statements write them: unpadded base64url.
CREATE FUNCTION fleet_base64url(b bytea) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT rtrim(translate(replace(encode(b, 'base64'), E'\n', ''), '+/', '-_'), '=')
$$;

-- Why the registration of the key row `k` does not hold, or NULL. With the owner's rights:
-- it reads principals and other keys whoever inserts.
CREATE FUNCTION fleet_registration_unsigned(k approver_keys) RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    s jsonb := k.registration;
    r jsonb;
    owner_role text;
    registrar record;
BEGIN
    IF k.registration_legacy THEN
        RETURN 'a key registered now carries its signed registration (only keys registered before registrations were signed are legacy)';
    END IF;
    IF s IS NULL OR k.registration_signature IS NULL OR k.registrar_key_id IS NULL THEN
        RETURN 'the signed registration, its signature and the registrar''s key id are required';
    END IF;
    r := s -> 'registrar';
    SELECT p.role INTO owner_role FROM principals p WHERE p.name = k.principal;
    IF s ->> 'statement' IS DISTINCT FROM 'fleet.key-registration.v1'
       OR s ->> 'principal' IS DISTINCT FROM k.principal
       OR s ->> 'role' IS DISTINCT FROM owner_role
       OR jsonb_typeof(s -> 'tenants') IS DISTINCT FROM 'array'
       OR s ->> 'key_id' IS DISTINCT FROM k.key_id
       OR s ->> 'algorithm' IS DISTINCT FROM k.algorithm
       OR s ->> 'public_key' IS DISTINCT FROM fleet_base64url(k.public_key)
       OR s ->> 'rp_id' IS DISTINCT FROM k.rp_id
       OR s ->> 'origin' IS DISTINCT FROM k.origin
       OR s ->> 'registered_at' IS DISTINCT FROM fleet_utc(k.registered_at)
       OR s ->> 'registered_by' IS DISTINCT FROM k.registered_by
       OR r ->> 'key_id' IS DISTINCT FROM k.registrar_key_id THEN
        RETURN 'the signed registration does not describe this key (principal, role, key, time, registered_by or registrar differ)';
    END IF;
    IF owner_role NOT IN ('approver', 'admin') THEN
        RETURN 'only approvers and administrators have registered keys';
    END IF;
    IF owner_role = 'admin' AND k.algorithm <> 'ed25519' THEN
        RETURN 'an administrator''s key is an Ed25519 key';
    END IF;
    IF r ->> 'kind' = 'evidence_key' THEN
        IF owner_role <> 'admin' THEN
            RETURN 'the deployment''s evidence key registers administrators'' keys only';
        END IF;
        IF r ->> 'public_key' IS NULL OR k.registrar_key_id IS DISTINCT FROM 'ed25519:' || left(encode(sha256(
               decode(translate(r ->> 'public_key', '-_', '+/') || repeat('=', (4 - length(r ->> 'public_key') % 4) % 4), 'base64')), 'hex'), 32) THEN
            RETURN 'the root registration''s key id is not its public key''s';
        END IF;
        RETURN NULL;
    END IF;
    IF r ->> 'kind' IS DISTINCT FROM 'admin' THEN
        RETURN 'the registrar is neither an administrator nor the deployment''s evidence key';
    END IF;
    SELECT a.principal, a.algorithm, a.removed_at, p.role INTO registrar
    FROM approver_keys a JOIN principals p ON p.name = a.principal
    WHERE a.key_id = k.registrar_key_id;
    IF NOT FOUND OR registrar.role <> 'admin' OR registrar.algorithm <> 'ed25519'
       OR registrar.removed_at IS NOT NULL OR r ->> 'principal' IS DISTINCT FROM registrar.principal THEN
        RETURN 'the registrar''s key is not a live administrator''s Ed25519 key';
    END IF;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION fleet_registration_unsigned(approver_keys) FROM PUBLIC;

CREATE FUNCTION approver_keys_registration_signed() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    missing text;
BEGIN
    missing := fleet_registration_unsigned(NEW);
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'key % refused: %', NEW.key_id, missing
            USING ERRCODE = 'check_violation', TABLE = 'approver_keys', CONSTRAINT = 'approver_keys_registration_signed',
                  HINT = 'register keys with fleetctl key add (or accept) and an administrator''s signing key; see docs/policies.md';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER approver_keys_registration_signed
    BEFORE INSERT ON approver_keys
    FOR EACH ROW EXECUTE FUNCTION approver_keys_registration_signed();

-- A key as an evidence bundle carries it: its row, its signed registration, and its
-- registrar's key the same way, nested, down to the root (or a legacy registration).
-- Bytes are hex; times UTC text. The depth bound is a guard only: a registrar's row
-- exists before the rows it registers and rows never change, so the chain has no cycle.
CREATE FUNCTION fleet_key_evidence(key text, depth integer DEFAULT 0) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = public, pg_temp AS $$
DECLARE
    k approver_keys;
BEGIN
    SELECT * INTO k FROM approver_keys WHERE key_id = key;
    IF NOT FOUND OR depth > 32 THEN
        RETURN NULL;
    END IF;
    RETURN jsonb_build_object(
        'key_id', k.key_id, 'principal', k.principal, 'algorithm', k.algorithm,
        'public_key_hex', encode(k.public_key, 'hex'), 'rp_id', k.rp_id, 'origin', k.origin,
        'registered_at', fleet_utc(k.registered_at), 'registered_by', k.registered_by,
        'registered_as', k.registered_as, 'removed_at', fleet_utc(k.removed_at),
        'removed_by', k.removed_by, 'registration_legacy', k.registration_legacy,
        'registration', k.registration,
        'registration_signature_hex', encode(k.registration_signature, 'hex'),
        'registrar_key_id', k.registrar_key_id,
        'registrar', CASE WHEN k.registration ->> 'registrar' IS NOT NULL
                           AND k.registration -> 'registrar' ->> 'kind' = 'admin'
                          THEN fleet_key_evidence(k.registrar_key_id, depth + 1) END);
END $$;
REVOKE ALL ON FUNCTION fleet_key_evidence(text, integer) FROM PUBLIC;

-- As 0069's, with each approval's and each mandate's key through `fleet_key_evidence`,
-- and the time each mandate was stored (its key must have been valid then).
CREATE OR REPLACE FUNCTION fleet_operation_evidence(op text, tenant text) RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT jsonb_build_object(
        'operation', jsonb_build_object(
            'operation_id', o.operation_id, 'tenant_id', o.tenant_id, 'action', o.action,
            'provider', o.provider, 'target', o.target, 'payload', o.payload,
            'payload_hash', o.payload_hash, 'policy_version', o.policy_version,
            'data_version', o.data_version, 'idempotency_key', o.idempotency_key,
            'payee', o.payee, 'risk', o.risk, 'status', o.status, 'reason', o.status_reason,
            'external_id', o.external_id, 'provider_request_id', o.provider_request_id,
            'result', o.result, 'approvals_required', o.approvals_required,
            'signatures_required', o.signatures_required, 'approval_status', o.approval_status,
            'decided_by', o.decided_by, 'decided_at', fleet_utc(o.decided_at),
            'submitted_by', o.submitted_by, 'created_at', fleet_utc(o.created_at),
            'resolved_at', fleet_utc(o.resolved_at)),
        'policy', (SELECT jsonb_build_object('version', p.policy_version, 'text', p.source_text,
                                             'rules', p.rules, 'loaded_at', fleet_utc(p.loaded_at))
                   FROM policies p WHERE p.policy_version = o.policy_version),
        'approvals', COALESCE((
            SELECT jsonb_agg(jsonb_build_object(
                'principal', a.principal, 'at', fleet_utc(a.at), 'signed_in_with', a.signed_in_with,
                'payload_hash', a.payload_hash, 'voided_at', fleet_utc(a.voided_at),
                'voided_reason', a.voided_reason, 'batch_id', a.batch_id,
                'signature_hex', encode(a.signature, 'hex'),
                'signed_expires_at', fleet_utc(a.signed_expires_at),
                'key', fleet_key_evidence(COALESCE(a.key_id, b.key_id)),
                'batch', CASE WHEN b.batch_id IS NOT NULL THEN jsonb_build_object(
                    'batch_id', b.batch_id, 'principal', b.principal, 'statement', b.statement,
                    'batch_hash', b.batch_hash, 'key_id', b.key_id,
                    'signature_hex', encode(b.signature, 'hex'), 'expires_at', fleet_utc(b.expires_at),
                    'at', fleet_utc(b.at)) END) ORDER BY a.at, a.principal)
            FROM approvals a
            LEFT JOIN approval_batches b ON b.batch_id = a.batch_id
            WHERE a.operation_id = o.operation_id AND a.tenant_id = o.tenant_id), '[]'::jsonb),
        'mandates', COALESCE((
            SELECT jsonb_agg(jsonb_build_object(
                'mandate_id', m.mandate_id, 'amount_minor', u.amount_minor, 'at', fleet_utc(u.at),
                'statement', m.statement, 'mandate_hash', m.mandate_hash, 'signed_by', m.signed_by,
                'key_id', m.key_id, 'signature_hex', encode(m.signature, 'hex'),
                'stored_at', fleet_utc(m.created_at), 'key', fleet_key_evidence(m.key_id),
                'revoked_at', fleet_utc(m.revoked_at)) ORDER BY u.at)
            FROM mandate_uses u JOIN mandates m ON m.mandate_id = u.mandate_id
            WHERE u.operation_id = o.operation_id AND u.tenant_id = o.tenant_id), '[]'::jsonb),
        'attempts', COALESCE((
            SELECT jsonb_agg(jsonb_build_object(
                'fence', a.fence, 'worker', a.worker, 'started_at', fleet_utc(a.started_at),
                'finished_at', fleet_utc(a.finished_at), 'request_sent', a.request_sent,
                'outcome', a.outcome, 'http_status', a.http_status, 'replayed', a.replayed,
                'external_id', a.external_id, 'provider_request_id', a.provider_request_id,
                'response', a.response, 'detail', a.detail) ORDER BY a.fence)
            FROM attempts a WHERE a.operation_id = o.operation_id AND a.tenant_id = o.tenant_id), '[]'::jsonb),
        'webhooks', COALESCE((
            SELECT jsonb_agg(jsonb_build_object(
                'provider', w.provider, 'event_id', w.event_id, 'event_type', w.event_type,
                'received_at', fleet_utc(w.received_at), 'payload_hash', w.payload_hash,
                'reference', w.reference, 'object_id', w.object_id, 'object', w.object,
                'outcome', w.outcome, 'applied_at', fleet_utc(w.applied_at)) ORDER BY w.received_at, w.event_id)
            FROM webhook_events w WHERE w.operation_id = o.operation_id AND w.tenant_id = o.tenant_id), '[]'::jsonb),
        'events', COALESCE((
            SELECT jsonb_agg(jsonb_build_object(
                'id', e.id, 'kind', e.kind, 'from_status', e.from_status, 'to_status', e.to_status,
                'fence', e.fence, 'actor', e.actor, 'reason', e.reason, 'evidence', e.evidence,
                'signed_in_with', e.signed_in_with, 'at', fleet_utc(e.at)) ORDER BY e.id)
            FROM operation_events e WHERE e.operation_id = o.operation_id AND e.tenant_id = o.tenant_id), '[]'::jsonb),
        'read_at', fleet_utc(now()))
    FROM operations o
    WHERE o.operation_id = op AND o.tenant_id = tenant
$$;
REVOKE ALL ON FUNCTION fleet_operation_evidence(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet_operation_evidence(text, text) TO fleet_api;
