-- The operation log. Rows are the truth; messages only ring doorbells.

CREATE TABLE operations (
    -- identity
    operation_id        text PRIMARY KEY CHECK (operation_id ~ '^op_[0-7][0-9A-HJKMNP-TV-Z]{25}$'),
    tenant_id           text NOT NULL,
    action              text NOT NULL CHECK (action IN ('payment.create', 'refund.create', 'crm.deal.create', 'crm.deal.update')),
    provider            text NOT NULL,
    target              text,
    supersedes          text,
    rationale           text,
    -- snapshot: immutable after insert (trigger below)
    payload             jsonb NOT NULL,
    payload_hash        text NOT NULL CHECK (payload_hash ~ '^sha256:[0-9a-f]{64}$'),
    policy_version      text NOT NULL,
    data_version        text NOT NULL,
    idempotency_key     text NOT NULL,
    -- approval
    approval_status     text NOT NULL DEFAULT 'pending'
                        CHECK (approval_status IN ('pending', 'approved', 'rejected', 'expired')),
    approval_expires_at timestamptz NOT NULL,
    approved_hash       text,
    decided_by          text,
    decided_at          timestamptz,
    -- execution
    status              text NOT NULL DEFAULT 'not_started'
                        CHECK (status IN ('not_started', 'in_progress', 'accepted', 'unknown',
                                          'succeeded', 'failed', 'cancelled', 'disputed')),
    status_reason       text,
    fence               bigint NOT NULL DEFAULT 0 CHECK (fence >= 0),
    lease_owner         text,
    lease_expires_at    timestamptz,
    attempts            integer NOT NULL DEFAULT 0,
    external_id         text,
    provider_request_id text,
    result              jsonb,
    error_code          text,
    deadline_at         timestamptz,
    unknown_since       timestamptz,
    escalated_at        timestamptz,
    resolved_at         timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT approved_has_hash CHECK (approval_status <> 'approved' OR approved_hash IS NOT NULL),
    CONSTRAINT lease_only_in_progress CHECK (status = 'in_progress' OR lease_owner IS NULL)
);

-- Sweeps read only the rows they act on, so their cost does not grow with history.
CREATE INDEX operations_expired_leases ON operations (lease_expires_at) WHERE status = 'in_progress';
CREATE INDEX operations_unknown ON operations (unknown_since) WHERE status = 'unknown';
CREATE INDEX operations_accepted_deadline ON operations (deadline_at) WHERE status = 'accepted';
CREATE INDEX operations_ready ON operations (updated_at)
    WHERE status = 'not_started' AND approval_status = 'approved';
CREATE INDEX operations_external_id ON operations (provider, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX operations_status_created ON operations (status, created_at);

CREATE FUNCTION operations_snapshot_is_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.operation_id    IS DISTINCT FROM OLD.operation_id
    OR NEW.tenant_id       IS DISTINCT FROM OLD.tenant_id
    OR NEW.action          IS DISTINCT FROM OLD.action
    OR NEW.provider        IS DISTINCT FROM OLD.provider
    OR NEW.target          IS DISTINCT FROM OLD.target
    OR NEW.payload         IS DISTINCT FROM OLD.payload
    OR NEW.payload_hash    IS DISTINCT FROM OLD.payload_hash
    OR NEW.policy_version  IS DISTINCT FROM OLD.policy_version
    OR NEW.data_version    IS DISTINCT FROM OLD.data_version
    OR NEW.idempotency_key IS DISTINCT FROM OLD.idempotency_key THEN
        RAISE EXCEPTION 'the snapshot of operation % is immutable', OLD.operation_id
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'a changed intent is a new operation that supersedes this one';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER operations_snapshot_immutable
    BEFORE UPDATE ON operations
    FOR EACH ROW EXECUTE FUNCTION operations_snapshot_is_immutable();

-- Append-only history of every decision and transition.
CREATE TABLE operation_events (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    operation_id text NOT NULL REFERENCES operations (operation_id),
    kind         text NOT NULL,
    from_status  text,
    to_status    text,
    fence        bigint,
    actor        text NOT NULL,
    reason       text,
    evidence     jsonb,
    at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX operation_events_by_operation ON operation_events (operation_id, id);

CREATE FUNCTION operation_events_are_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'operation_events is append-only (% refused)', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END $$;

CREATE TRIGGER operation_events_append_only
    BEFORE UPDATE OR DELETE ON operation_events
    FOR EACH ROW EXECUTE FUNCTION operation_events_are_append_only();
CREATE TRIGGER operation_events_no_truncate
    BEFORE TRUNCATE ON operation_events
    FOR EACH STATEMENT EXECUTE FUNCTION operation_events_are_append_only();

-- One row per claim, written before the provider call and completed with what the
-- provider said, even by a worker whose lease was lost. reconcile reads it first.
CREATE TABLE attempts (
    operation_id        text NOT NULL REFERENCES operations (operation_id),
    fence               bigint NOT NULL,
    worker              text NOT NULL,
    started_at          timestamptz NOT NULL DEFAULT now(),
    finished_at         timestamptz,
    outcome             text CHECK (outcome IN ('succeeded', 'failed', 'accepted', 'not_executed', 'unknown')),
    http_status         integer,
    replayed            boolean,
    external_id         text,
    provider_request_id text,
    response            jsonb,
    detail              text,
    PRIMARY KEY (operation_id, fence)
);

-- Webhook deduplication: one row per (provider, event id), kept at least 7 days.
CREATE TABLE webhook_events (
    provider     text NOT NULL,
    event_id     text NOT NULL,
    event_type   text NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    operation_id text,
    payload_hash text NOT NULL,
    outcome      text,
    applied_at   timestamptz,
    PRIMARY KEY (provider, event_id)
);
CREATE INDEX webhook_events_received ON webhook_events (received_at);
CREATE INDEX webhook_events_unlinked ON webhook_events (received_at) WHERE operation_id IS NULL;
