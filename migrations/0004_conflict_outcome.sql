-- A conditional update refused by the provider (412) is an attempt outcome of its own.
ALTER TABLE attempts DROP CONSTRAINT attempts_outcome_check;
ALTER TABLE attempts ADD CONSTRAINT attempts_outcome_check
    CHECK (outcome IN ('succeeded', 'failed', 'accepted', 'not_executed', 'unknown', 'version_conflict'));
