-- Receipts only with the provider's proof, and the records an evidence bundle is made of.
--
-- 1. `succeeded` needs a confirmation, whoever writes (constraint
--    `operations_succeeded_with_proof`, SQLSTATE 23514 check_violation). The history row
--    of the move (`kind = 'transition'`, written in the same transaction, as the store
--    writes it in the same statement) carries `evidence.confirmed`
--    (`fleet_core::Confirmation`), and it must hold:
--    * `by = 'answer'`: the provider's answer to one attempt. The row's `external_id` is
--      set, the confirmation names it (`object_id`), and the attempt of `fence` answered
--      `succeeded` with that object;
--    * `by = 'lookup'`: a lookup at the provider found the object. `external_id` set and
--      named, and the lookup's own history row was written in the same transaction;
--    * `by = 'webhook'`: a signed event of the provider. `external_id` set and named, and
--      the event (`webhook_event_id`) is in `webhook_events` for the operation's provider;
--    * `by = 'operator'`: a person's resolution. Written by an operator (`operator:<name>`
--      actor) through the API's role or the owner (fleetctl), with the evidence they
--      stated (`evidence`, not blank).
--    Anything else (no confirmation, another object, no attempt, lookup or event behind
--    it) is refused, and the whole statement is rolled back. Before this, a role allowed
--    to write `status` could write `succeeded` with nothing behind it, and the agent would
--    be told its payment was made.
-- 2. `operation_view` says how a succeeded operation was confirmed (`confirmation`), so
--    the API's answer and every event built from the view (the outbox's `succeeded`)
--    carry the provider object id and how it was confirmed.
-- 3. `fleet_operation_evidence(op, tenant)`: every row an evidence bundle is made of, read
--    with the owner's rights (the API's role reads neither the policy's text nor the
--    attempts' answers otherwise), for the API only.

CREATE FUNCTION fleet_success_unproven(op text, tenant text, from_status text, provider text,
                                       object_id text, component text)
RETURNS text LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    e record;
    c jsonb;
BEGIN
    SELECT ev.id, ev.actor, ev.evidence -> 'confirmed' AS confirmed INTO e
    FROM operation_events ev
    WHERE ev.operation_id = op AND ev.tenant_id = tenant AND ev.kind = 'transition'
      AND ev.from_status = fleet_success_unproven.from_status AND ev.to_status = 'succeeded'
      AND ev.xmin = pg_current_xact_id()::xid
    ORDER BY ev.id DESC LIMIT 1;
    IF NOT FOUND THEN
        RETURN 'no history row of the move was written with it';
    END IF;
    c := e.confirmed;
    IF c IS NULL OR jsonb_typeof(c) <> 'object' THEN
        RETURN 'its history row names no confirmation';
    END IF;
    IF c ->> 'by' = 'operator' THEN
        IF e.actor NOT LIKE 'operator:%' OR NOT (component IS NULL OR component = 'fleet_api') THEN
            RETURN 'only an operator''s recorded decision confirms by operator';
        END IF;
        IF length(btrim(COALESCE(c ->> 'evidence', ''))) = 0 THEN
            RETURN 'the operator stated no evidence';
        END IF;
        RETURN NULL;
    END IF;
    IF c ->> 'by' IS NULL OR c ->> 'by' NOT IN ('answer', 'lookup', 'webhook') THEN
        RETURN 'the confirmation is by no known means';
    END IF;
    IF object_id IS NULL OR object_id = '' THEN
        RETURN 'no provider object id is recorded';
    END IF;
    IF c ->> 'object_id' IS DISTINCT FROM object_id THEN
        RETURN 'the confirmation names another provider object';
    END IF;
    IF c ->> 'by' = 'answer' THEN
        IF jsonb_typeof(c -> 'fence') IS DISTINCT FROM 'number' OR NOT EXISTS (
            SELECT FROM attempts a
            WHERE a.operation_id = op AND a.tenant_id = tenant
              AND a.fence = (c ->> 'fence')::numeric AND a.outcome = 'succeeded'
              AND a.external_id = object_id) THEN
            RETURN 'no attempt answered succeeded with this object';
        END IF;
    ELSIF c ->> 'by' = 'lookup' THEN
        IF NOT EXISTS (SELECT FROM operation_events l
                       WHERE l.operation_id = op AND l.tenant_id = tenant AND l.kind = 'lookup'
                         AND l.xmin = pg_current_xact_id()::xid) THEN
            RETURN 'no lookup was recorded with the move';
        END IF;
    ELSE
        IF NOT EXISTS (SELECT FROM webhook_events w
                       WHERE w.provider = fleet_success_unproven.provider
                         AND w.event_id = c ->> 'webhook_event_id') THEN
            RETURN 'the provider event it names was not received';
        END IF;
    END IF;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION fleet_success_unproven(text, text, text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet_success_unproven(text, text, text, text, text, text)
    TO fleet_api, fleet_prepare, fleet_execute, fleet_reconcile, fleet_webhook_ingest, fleet_relay;

-- With the writer's rights, so that `fleet_component()` names the writer's role; the
-- reads are the function's above, with the owner's.
CREATE FUNCTION operations_succeeded_with_proof() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    missing text;
BEGIN
    missing := fleet_success_unproven(NEW.operation_id, NEW.tenant_id, OLD.status, NEW.provider,
                                      NEW.external_id, fleet_component());
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'operation %: % → succeeded refused: %', NEW.operation_id, OLD.status, missing
            USING ERRCODE = 'check_violation', TABLE = 'operations', CONSTRAINT = 'operations_succeeded_with_proof',
                  HINT = 'succeeded needs the provider''s answer, a lookup, a provider event or an operator''s stated evidence; see docs/design.md';
    END IF;
    RETURN NULL;
END $$;

-- After the statement, like the status move check (0054): the history row the same
-- statement writes is seen.
CREATE TRIGGER operations_succeeded_with_proof
    AFTER UPDATE ON operations
    FOR EACH ROW
    WHEN (NEW.status = 'succeeded' AND OLD.status IS DISTINCT FROM 'succeeded')
    EXECUTE FUNCTION operations_succeeded_with_proof();

-- How a succeeded operation was confirmed: the confirmation of the move that made it so.
-- PL/pgSQL, as 0030 asks of what the view calls: its plan is kept between queries.
CREATE FUNCTION fleet_confirmation(op text, tenant text) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    RETURN (SELECT e.evidence -> 'confirmed' FROM operation_events e
            WHERE e.operation_id = op AND e.tenant_id = tenant AND e.kind = 'transition'
              AND e.to_status = 'succeeded'
            ORDER BY e.id DESC LIMIT 1);
END $$;

-- As 0055's, with `confirmation` (null until succeeded).
CREATE OR REPLACE FUNCTION operation_view(o operations) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN jsonb_build_object(
        'operation_id', o.operation_id,
        'tenant_id', o.tenant_id,
        'action', o.action,
        'provider', o.provider,
        'target', o.target,
        'supersedes', o.supersedes,
        'payload', o.payload,
        'payload_hash', o.payload_hash,
        'policy_version', o.policy_version,
        'data_version', o.data_version,
        'payee', o.payee,
        'risk', o.risk,
        'status', o.status,
        'reason', o.status_reason,
        'error_code', o.error_code,
        'external_id', o.external_id,
        'confirmation', CASE WHEN o.status = 'succeeded' THEN fleet_confirmation(o.operation_id, o.tenant_id) END,
        'escalated', o.escalated_at IS NOT NULL,
        'approval_status', o.approval_status,
        'approval_expires_at', fleet_utc(o.approval_expires_at),
        'approvals_required', o.approvals_required,
        'approvals_received', (fleet_quorum_count(o.operation_id, o.tenant_id)).counted,
        'decided_by', o.decided_by,
        'decided_at', fleet_utc(o.decided_at),
        'submitted_by', o.submitted_by,
        'created_at', fleet_utc(o.created_at),
        'updated_at', fleet_utc(o.updated_at),
        'unknown_since', fleet_utc(o.unknown_since),
        'escalated_at', fleet_utc(o.escalated_at),
        'resolved_at', fleet_utc(o.resolved_at)
    );
END $$;

-- Every record an evidence bundle is made of, as stored: the operation, the policy it was
-- prepared under, the approvals (voided ones too) with their keys' registrations and
-- batches, the mandate uses, the attempts, the provider events linked to it and its whole
-- history. Bytes are hex (`encode(…, 'hex')`); times are UTC text. NULL when the tenant
-- holds no such operation. The bundle itself (the signed statements, the digests, the
-- deployment's signature) is made by the API (`fleet_core::evidence`).
CREATE FUNCTION fleet_operation_evidence(op text, tenant text) RETURNS jsonb
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
                'key', CASE WHEN k.key_id IS NOT NULL THEN jsonb_build_object(
                    'key_id', k.key_id, 'principal', k.principal, 'algorithm', k.algorithm,
                    'public_key_hex', encode(k.public_key, 'hex'), 'rp_id', k.rp_id, 'origin', k.origin,
                    'registered_at', fleet_utc(k.registered_at), 'registered_by', k.registered_by,
                    'registered_as', k.registered_as, 'removed_at', fleet_utc(k.removed_at),
                    'removed_by', k.removed_by) END,
                'batch', CASE WHEN b.batch_id IS NOT NULL THEN jsonb_build_object(
                    'batch_id', b.batch_id, 'principal', b.principal, 'statement', b.statement,
                    'batch_hash', b.batch_hash, 'key_id', b.key_id,
                    'signature_hex', encode(b.signature, 'hex'), 'expires_at', fleet_utc(b.expires_at),
                    'at', fleet_utc(b.at)) END) ORDER BY a.at, a.principal)
            FROM approvals a
            LEFT JOIN approver_keys k ON k.key_id = COALESCE(a.key_id, (SELECT b2.key_id FROM approval_batches b2 WHERE b2.batch_id = a.batch_id))
            LEFT JOIN approval_batches b ON b.batch_id = a.batch_id
            WHERE a.operation_id = o.operation_id AND a.tenant_id = o.tenant_id), '[]'::jsonb),
        'mandates', COALESCE((
            SELECT jsonb_agg(jsonb_build_object(
                'mandate_id', m.mandate_id, 'amount_minor', u.amount_minor, 'at', fleet_utc(u.at),
                'statement', m.statement, 'mandate_hash', m.mandate_hash, 'signed_by', m.signed_by,
                'key_id', m.key_id, 'signature_hex', encode(m.signature, 'hex'),
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
