-- The approval-expiry sweep cancels an unstarted operation whose approval window closed,
-- and marks a pending approval `expired`. It used to mark the approval after the cancel,
-- so the `approval_expired` event, written with the cancel, carried `approval_status`
-- `pending` while the operation it reported was already `expired` in every later read.
-- The sweep now marks the approval first, on the still unstarted row (the state a refused
-- late approval leaves), then cancels it in the same transaction, so the event carries
-- the view the API serves. A row already cancelled is still accepted, for a sweeper of the
-- previous release during a rolling upgrade. Only a pending approval past its window is
-- ever marked, as before.
CREATE OR REPLACE FUNCTION fleet_expire_approval(op text, tenant text) RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    WITH expired AS (
        UPDATE operations SET approval_status = 'expired', updated_at = now()
        WHERE operation_id = op AND tenant_id = tenant AND approval_status = 'pending'
          AND approval_expires_at <= now() AND status IN ('not_started', 'cancelled')
        RETURNING 1
    )
    SELECT EXISTS (SELECT FROM expired)
$$;
