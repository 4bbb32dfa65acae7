-- Every recorded approval is an event.
--
-- An approval that left the quorum short wrote history (`approval_recorded`) but published
-- nothing, so a bot that tells approvers what waits for them could not say "1 of 2
-- approvals, waiting for you" until the quorum was complete. It now publishes
-- `fleet.operation.approval_recorded`, and both approval events carry who approved:
-- `data.approval` = {"by": <principal>, "signed": <whether the approval carries a
-- signature>, "signed_in_with": <how that person authenticated>}, beside the view's
-- `approvals_received` and `approvals_required`.
--
-- As 0030 asks, the functions stay PL/pgSQL; everything else they return is unchanged.

ALTER TABLE operation_outbox DROP CONSTRAINT operation_outbox_event_type_check;
ALTER TABLE operation_outbox ADD CONSTRAINT operation_outbox_event_type_check CHECK (event_type IN (
    'prepared', 'approval_recorded', 'approved', 'rejected', 'approval_expired', 'superseded',
    'executing', 'accepted', 'succeeded', 'failed', 'cancelled', 'unknown',
    'requeued', 'escalated', 'resolved', 'disputed'));

CREATE OR REPLACE FUNCTION outcome_event_type(kind text, to_status text, actor text, reason text)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN CASE
        WHEN kind = 'prepared' THEN 'prepared'
        WHEN kind = 'approval_recorded' THEN 'approval_recorded'
        WHEN kind = 'approved' THEN 'approved'
        WHEN kind = 'approval_expired' THEN 'approval_expired'
        WHEN kind = 'escalated' THEN 'escalated'
        -- A webhook that contradicts the row escalates it; on a disputed row, or on a row
        -- already escalated to a person, it is only noted.
        WHEN kind = 'webhook_conflict' THEN
            CASE WHEN reason NOT IN ('webhook_on_disputed', 'operation_escalated') OR reason IS NULL THEN 'escalated' END
        WHEN kind <> 'transition' THEN NULL
        WHEN actor LIKE 'operator:%' THEN
            CASE WHEN to_status = 'disputed' THEN 'disputed' ELSE 'resolved' END
        WHEN to_status = 'in_progress' THEN 'executing'
        WHEN to_status = 'not_started' THEN 'requeued'
        WHEN to_status = 'accepted' THEN 'accepted'
        WHEN to_status = 'unknown' THEN 'unknown'
        WHEN to_status = 'succeeded' THEN 'succeeded'
        WHEN to_status = 'failed' THEN 'failed'
        WHEN to_status = 'disputed' THEN 'disputed'
        WHEN to_status = 'cancelled' THEN
            CASE reason
                WHEN 'approval_rejected' THEN 'rejected'
                WHEN 'approval_expired' THEN 'approval_expired'
                WHEN 'superseded' THEN 'superseded'
                ELSE 'cancelled'
            END
    END;
END $$;

CREATE OR REPLACE FUNCTION operation_events_to_outbox() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    event_type text := outcome_event_type(NEW.kind, NEW.to_status, NEW.actor, NEW.reason);
    op operations;
    extra jsonb := jsonb_build_object('sequence', NEW.event_sequence);
    approver text;
BEGIN
    SELECT * INTO STRICT op FROM operations WHERE operation_id = NEW.operation_id;
    IF event_type = 'unknown' AND op.escalated_at IS NOT NULL THEN
        event_type := 'escalated';
    END IF;
    IF event_type IN ('approval_recorded', 'approved') AND NEW.actor LIKE 'approver:%' THEN
        approver := substr(NEW.actor, length('approver:') + 1);
        extra := extra || jsonb_build_object('approval', jsonb_build_object(
            'by', approver,
            'signed', EXISTS (SELECT FROM approvals a
                              WHERE a.operation_id = op.operation_id AND a.principal = approver
                                AND a.payload_hash = op.payload_hash AND a.signature IS NOT NULL),
            'signed_in_with', NEW.signed_in_with));
    END IF;
    INSERT INTO operation_outbox (operation_id, sequence, event_type, tenant_id, history_id, occurred_at, data)
    VALUES (op.operation_id, NEW.event_sequence, event_type, op.tenant_id, NEW.id, NEW.at,
            operation_view(op) || extra);
    RETURN NULL;
END
$$;
