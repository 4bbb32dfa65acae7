-- The providers the fleet has adapters for, as `fleet_core::ProviderName` names them.
-- Prepare already stores an intent only once the capability guard admitted its provider;
-- the constraint makes the database say so too, so a row read back always names a known
-- provider (whoever wrote it). Adding a provider adds its name here, in a new migration.
ALTER TABLE operations ADD CONSTRAINT operations_provider_check
    CHECK (provider IN ('payments', 'crm', 'orders', 'esign'));
