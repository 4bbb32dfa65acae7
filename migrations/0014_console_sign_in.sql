-- People sign in to the console with OpenID Connect. A principal is matched by the
-- subject the configured issuer gives it (one issuer, so the subject alone identifies the
-- person); the console keeps server-side sessions keyed by the SHA-256 of a random secret
-- that only the person's cookie holds.

ALTER TABLE principals
    ADD COLUMN oidc_subject text UNIQUE CHECK (length(oidc_subject) BETWEEN 1 AND 255),
    -- A removed principal keeps its name for the history that cites it, but has no
    -- tenants, tokens, sessions or subject: it can neither sign in nor act.
    ADD COLUMN removed_at timestamptz;

CREATE TABLE console_sessions (
    -- 'sha256:' + hex of the cookie's secret; the secret itself is never stored.
    session_hash   text PRIMARY KEY CHECK (session_hash ~ '^sha256:[0-9a-f]{64}$'),
    principal      text NOT NULL REFERENCES principals (name),
    signed_in_with text NOT NULL CHECK (signed_in_with IN ('oidc')),
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL
);
CREATE INDEX console_sessions_principal ON console_sessions (principal);
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);

-- Where a per-component API role exists, it reads principals and keeps the sessions.
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'fleet_api') THEN
        GRANT SELECT, INSERT, DELETE ON console_sessions TO fleet_api;
        GRANT SELECT ON principals TO fleet_api;
    END IF;
END $$;
