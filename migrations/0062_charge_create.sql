-- charge.create: collect an invoice from a customer's saved payment method, at the
-- payments provider spoken as Stripe (docs/providers/stripe.md#chargecreate).
--
-- * The database's own list of actions admits it: `operations_snapshot_is_valid` as
--   0040_approval_rule.sql wrote it, with 'charge.create' added.
-- * Its payee evidence is who is charged: the saved payment method as Stripe describes it
--   at intake (the customer's name and e-mail, the card's brand and last four digits or
--   the bank account's, the country, a fingerprint). The evidence keeps the shape every
--   payee has (0047_payee_evidence.sql); its account scheme is `card` or `bank`, so the
--   insert's check admits those two besides `iban` and `local`. The fingerprint is still
--   `sha256:` and 64 hex digits (a hash of Stripe's own fingerprint), never a card number.

CREATE OR REPLACE FUNCTION operations_snapshot_is_valid() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    violated text;
BEGIN
    -- As for a CHECK constraint, NULL passes here; the columns' NOT NULL refuses it.
    IF NEW.operation_id !~ '^op_[0-7][0-9A-HJKMNP-TV-Z]{25}$' THEN
        violated := 'operations_operation_id_check';
    ELSIF NEW.action NOT IN ('payment.create', 'refund.create', 'crm.deal.create', 'crm.deal.update',
                             'order.status.change', 'contract.send', 'charge.create') THEN
        violated := 'operations_action_check';
    -- The providers the fleet has adapters for, as `fleet_core::ProviderName` names them.
    ELSIF NEW.provider NOT IN ('payments', 'crm', 'orders', 'esign') THEN
        violated := 'operations_provider_check';
    ELSIF NEW.payload_hash !~ '^sha256:[0-9a-f]{64}$' THEN
        violated := 'operations_payload_hash_check';
    ELSIF NEW.approvals_required NOT BETWEEN 1 AND 10 THEN
        violated := 'operations_approvals_required_check';
    ELSIF NEW.status <> 'not_started' OR NEW.approval_status <> 'pending'
       OR NEW.approved_hash IS NOT NULL OR NEW.decided_by IS NOT NULL OR NEW.decided_at IS NOT NULL
       OR NEW.status_reason IS NOT NULL OR NEW.fence <> 0 OR NEW.lease_owner IS NOT NULL
       OR NEW.lease_expires_at IS NOT NULL OR NEW.attempts <> 0 OR NEW.external_id IS NOT NULL
       OR NEW.provider_request_id IS NOT NULL OR NEW.result IS NOT NULL OR NEW.error_code IS NOT NULL
       OR NEW.deadline_at IS NOT NULL OR NEW.unknown_since IS NOT NULL OR NEW.escalated_at IS NOT NULL
       OR NEW.resolved_at IS NOT NULL OR NEW.audited_at IS NOT NULL OR NEW.lookup_failures <> 0
       OR NEW.next_lookup_at IS NOT NULL THEN
        violated := 'operations_inserted_pending';
    END IF;
    IF violated = 'operations_inserted_pending' THEN
        RAISE EXCEPTION 'new row for relation "operations" violates check constraint "%"', violated
            USING ERRCODE = 'check_violation', TABLE = 'operations', CONSTRAINT = violated,
                  HINT = 'an operation is inserted not_started and pending; approvals decide the rest';
    ELSIF violated IS NOT NULL THEN
        RAISE EXCEPTION 'new row for relation "operations" violates check constraint "%"', violated
            USING ERRCODE = 'check_violation', TABLE = 'operations', CONSTRAINT = violated;
    END IF;
    RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION operations_payee_is_valid() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.payee IS NOT NULL AND NOT (
        jsonb_typeof(NEW.payee) = 'object'
        AND jsonb_typeof(NEW.payee -> 'id') = 'string'
        AND jsonb_typeof(NEW.payee -> 'looked_up_at') = 'string'
        AND CASE NEW.payee ->> 'status'
            WHEN 'found' THEN
                jsonb_typeof(NEW.payee -> 'name') = 'string'
                AND (NEW.payee ->> 'country') ~ '^[A-Z]{2}$'
                AND (NEW.payee #>> '{account,scheme}') IN ('iban', 'local', 'card', 'bank')
                AND jsonb_typeof(NEW.payee #> '{account,masked}') = 'string'
                AND (NEW.payee #>> '{account,fingerprint}') ~ '^sha256:[0-9a-fA-F]{64}$'
                AND jsonb_typeof(NEW.payee -> 'verified') = 'boolean'
                AND jsonb_typeof(NEW.payee -> 'version') = 'number'
                AND (NEW.payee ->> 'version')::numeric >= 1
            WHEN 'unknown' THEN
                (NEW.payee ->> 'reason') IN ('not_found', 'lookup_failed')
            ELSE false
        END
    ) THEN
        RAISE EXCEPTION 'new row for relation "operations" violates check constraint "%"',
                        'operations_payee_check'
            USING ERRCODE = 'check_violation', TABLE = 'operations',
                  CONSTRAINT = 'operations_payee_check';
    END IF;
    RETURN NEW;
END $$;
