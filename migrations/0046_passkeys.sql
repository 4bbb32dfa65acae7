-- Passkeys: approvers sign approvals in the console with WebAuthn.
--
-- A passkey is a P-256 key (ES256) held by the approver's authenticator (a phone, a
-- security key, the laptop's platform authenticator). The console asks it to sign an
-- assertion whose challenge is the SHA-256 of the approval statement, so the assertion is
-- a signature over the statement, checked where an Ed25519 signature is checked: by the
-- API before recording, by fleet-execute before its call (`fleet_core::passkey`).
--
-- Registering one takes two people, as for an Ed25519 key: the approver creates the
-- passkey in the console (the API verifies the WebAuthn registration and keeps it as a
-- request, below), and an administrator accepts it (`fleetctl key accept`), which copies
-- it into approver_keys as the schema's owner. The API never writes approver_keys: a
-- compromised API can file a request naming anyone, but nothing it files counts until an
-- administrator accepts that exact key id, which the approver read in their console.

-- Keys of two algorithms. A passkey's public key is its uncompressed P-256 point; it is
-- scoped to the relying party id and origin of the console it was created in, which the
-- verifier checks in every assertion; its credential id is what the browser is asked for.
ALTER TABLE approver_keys
    DROP CONSTRAINT approver_keys_key_id_check,
    DROP CONSTRAINT approver_keys_algorithm_check,
    DROP CONSTRAINT approver_keys_public_key_check,
    ADD COLUMN credential_id bytea UNIQUE CHECK (octet_length(credential_id) BETWEEN 16 AND 1023),
    ADD COLUMN rp_id text CHECK (length(rp_id) BETWEEN 1 AND 253),
    ADD COLUMN origin text CHECK (length(origin) BETWEEN 1 AND 512),
    ADD CONSTRAINT approver_keys_algorithm_check CHECK (
        (algorithm = 'ed25519' AND key_id ~ '^ed25519:[0-9a-f]{32}$' AND octet_length(public_key) = 32
             AND credential_id IS NULL AND rp_id IS NULL AND origin IS NULL)
        OR (algorithm = 'es256' AND key_id ~ '^passkey:[0-9a-f]{32}$' AND octet_length(public_key) = 65
             AND credential_id IS NOT NULL AND rp_id IS NOT NULL AND origin IS NOT NULL));

-- A key's row changes once, to record its removal; the passkey's scope is part of the key.
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
    OR NEW.registered_as IS DISTINCT FROM OLD.registered_as THEN
        RAISE EXCEPTION 'approver_keys: a key is only ever removed, once (% refused)', TG_OP
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END $$;

-- A passkey's signature is its assertion (authenticator data, client data, DER signature;
-- `fleet_core::passkey::Assertion`), longer than an Ed25519 signature's 64 bytes.
ALTER TABLE approvals
    DROP CONSTRAINT approvals_signature_check,
    ADD CONSTRAINT approvals_signature_check CHECK (
        (key_id LIKE 'ed25519:%' AND octet_length(signature) = 64)
        OR (key_id LIKE 'passkey:%' AND octet_length(signature) BETWEEN 64 AND 4096));

-- The registrations an approver started in the console: while `finished_at` is null, the
-- ceremony's state (the challenge the browser must sign); once finished, the passkey the
-- API verified, waiting for an administrator. Nothing here counts for any approval.
CREATE TABLE passkey_requests (
    request_id    text PRIMARY KEY CHECK (request_id ~ '^[0-9A-Za-z_-]{16,64}$'),
    principal     text NOT NULL REFERENCES principals (name),
    ceremony      jsonb,
    started_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    key_id        text UNIQUE CHECK (key_id ~ '^passkey:[0-9a-f]{32}$'),
    public_key    bytea CHECK (octet_length(public_key) = 65),
    credential_id bytea CHECK (octet_length(credential_id) BETWEEN 16 AND 1023),
    rp_id         text CHECK (length(rp_id) BETWEEN 1 AND 253),
    origin        text CHECK (length(origin) BETWEEN 1 AND 512),
    CONSTRAINT passkey_requests_finished_whole CHECK (
        (finished_at IS NULL) = (key_id IS NULL)
        AND (finished_at IS NULL) = (public_key IS NULL)
        AND (finished_at IS NULL) = (credential_id IS NULL)
        AND (finished_at IS NULL) = (rp_id IS NULL)
        AND (finished_at IS NULL) = (origin IS NULL)
        AND (finished_at IS NULL) = (ceremony IS NOT NULL))
);
CREATE INDEX passkey_requests_principal ON passkey_requests (principal, started_at);

GRANT SELECT, DELETE ON passkey_requests TO fleet_api;
GRANT INSERT (request_id, principal, ceremony) ON passkey_requests TO fleet_api;
GRANT UPDATE (ceremony, finished_at, key_id, public_key, credential_id, rp_id, origin)
    ON passkey_requests TO fleet_api;
