-- Callers of the HTTP API. Every caller is a principal with one role and the tenants it
-- may act for; it authenticates with bearer tokens of which only a SHA-256 is stored.

CREATE TABLE principals (
    name       text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$'),
    -- Only 'agent' is used by the routes that exist; the others are stored for the
    -- approval and operator routes.
    role       text NOT NULL CHECK (role IN ('agent', 'approver', 'operator', 'admin')),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE principal_tenants (
    principal  text NOT NULL REFERENCES principals (name),
    tenant_id  text NOT NULL CHECK (length(tenant_id) BETWEEN 1 AND 256),
    granted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (principal, tenant_id)
);

CREATE TABLE api_tokens (
    token_id       text PRIMARY KEY,
    principal      text NOT NULL REFERENCES principals (name),
    -- 'sha256:' + hex of the token; the token itself is shown once and never stored. A
    -- request is authenticated by looking its token's hash up here.
    token_hash     text NOT NULL UNIQUE CHECK (token_hash ~ '^sha256:[0-9a-f]{64}$'),
    -- The token's first characters ('fleet_' + 8 hex digits), to name it in listings.
    display_prefix text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    revoked_at     timestamptz
);
CREATE INDEX api_tokens_display_prefix ON api_tokens (display_prefix);
CREATE INDEX api_tokens_principal ON api_tokens (principal);

-- A tenant's operations newest first, for the API's keyset pagination: each page reads
-- at most one page of index entries per tenant, however long the history.
CREATE INDEX operations_tenant_created ON operations (tenant_id, created_at DESC, operation_id DESC);
