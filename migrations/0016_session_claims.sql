-- A console configured to take roles and tenants from the issuer's ID token (a role claim
-- and a tenants claim) keeps what the token said with the session it started: for that
-- session they replace the principal's own role and tenants. The principal is still the
-- one the subject names (removing it ends its sessions), and NULL means "as the principals
-- table says".
ALTER TABLE console_sessions
    ADD COLUMN role    text CHECK (role IN ('agent', 'approver', 'operator', 'admin')),
    ADD COLUMN tenants text[],
    ADD CONSTRAINT console_sessions_claims_together CHECK ((role IS NULL) = (tenants IS NULL));
