-- Post-settlement audit. An operation that succeeded after an uncertain attempt (it was
-- unknown at some point, or was claimed more than once) is looked up once more, after the
-- provider can no longer commit an earlier request and that request's effect would be
-- searchable. More than one provider object for our reference is a data incident. The
-- audit's next try reuses next_lookup_at (a succeeded row is never looked up otherwise).
ALTER TABLE operations ADD COLUMN audited_at timestamptz;

CREATE INDEX operations_audit_due ON operations (resolved_at)
    WHERE status = 'succeeded' AND audited_at IS NULL AND (unknown_since IS NOT NULL OR attempts > 1);
