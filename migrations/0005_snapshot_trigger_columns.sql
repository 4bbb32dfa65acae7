-- The immutability trigger fires only for UPDATEs that name a snapshot column: an UPDATE
-- that does not name them cannot change them, so the guarantee is the same, and the hot
-- path (claim, record, lease renewal) no longer runs PL/pgSQL on every write.
DROP TRIGGER operations_snapshot_immutable ON operations;
CREATE TRIGGER operations_snapshot_immutable
    BEFORE UPDATE OF operation_id, tenant_id, action, provider, target, payload, payload_hash,
                     policy_version, data_version, idempotency_key
    ON operations
    FOR EACH ROW EXECUTE FUNCTION operations_snapshot_is_immutable();
