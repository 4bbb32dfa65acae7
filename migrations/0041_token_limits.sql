-- Bearer tokens that end, that show when they were last used, and that may act for fewer
-- tenants than their principal.

ALTER TABLE api_tokens
    -- When the API stops accepting the token (by the database's clock, as every expiry
    -- of the fleet). Every token has one: `fleetctl token create --expires-in` (90 days
    -- unless told). Tokens issued before this column existed get 90 days from the
    -- upgrade, the lifetime a new one gets, so the upgrade stops no running agent and
    -- none of them lives on forever.
    ADD COLUMN expires_at timestamptz,
    -- When a request last authenticated with it, to the minute: the API writes it at most
    -- once a minute per token (never on every request). NULL: never used.
    ADD COLUMN last_used_at timestamptz,
    -- The tenants the token is limited to, each one its principal's (checked when it is
    -- created); the token acts for those its principal still has. NULL: all of the
    -- principal's tenants, now and later.
    ADD COLUMN tenants text[]
        CONSTRAINT api_tokens_tenants_listed
        CHECK (tenants IS NULL OR (cardinality(tenants) >= 1 AND array_position(tenants, NULL) IS NULL));

UPDATE api_tokens SET expires_at = now() + interval '90 days';
ALTER TABLE api_tokens
    ALTER COLUMN expires_at SET NOT NULL,
    ADD CONSTRAINT api_tokens_expires_after_creation CHECK (expires_at > created_at);

-- The API records a token's use; it changes nothing else of a token.
GRANT UPDATE (last_used_at) ON api_tokens TO fleet_api;
