-- One deployment, one set of roles.
--
-- The component roles `fleet_api`, `fleet_prepare`, … belong to the whole Postgres
-- cluster, so every deployment on it shared them: one deployment's API role could log in
-- to another deployment's database and hold the rights granted there, and setting a
-- password for one set them for all. From here on they are group roles that hold the
-- grants, and nobody logs in as them. Each deployment logs in with its own roles,
-- `<prefix>__<component>` (prefix: `FLEET_DB_ROLE_PREFIX`, by default the database's
-- name), members of the groups, which `fleet_store::migrate` creates after the migrations
-- together with the database's CONNECT grants: revoked from PUBLIC, granted to those roles
-- only. A role of another deployment is a member of the same groups but cannot connect
-- here, and grants are per database, so it reaches nothing of this one.
--
-- Every migration grants to the group names, as before.

DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['fleet_api', 'fleet_prepare', 'fleet_execute', 'fleet_reconcile',
                             'fleet_webhook_ingest', 'fleet_relay'] LOOP
        IF EXISTS (SELECT FROM pg_roles WHERE rolname = r AND rolcanlogin) THEN
            BEGIN
                EXECUTE format('ALTER ROLE %I NOLOGIN', r);
            EXCEPTION
                -- The migration of another database did the same at the same moment
                -- ("tuple concurrently updated").
                WHEN internal_error THEN NULL;
            END;
        END IF;
    END LOOP;
    -- No group may connect anywhere by itself: connecting is the deployment roles' own.
    EXECUTE format('REVOKE CONNECT, TEMPORARY ON DATABASE %I FROM PUBLIC, fleet_api, fleet_prepare, '
                   'fleet_execute, fleet_reconcile, fleet_webhook_ingest, fleet_relay', current_database());
END $$;
