//! An intent proposed as named arguments, one tool per action (the MCP door): every
//! member of intent.v1 but those the tool implies (`schema`, `action`, `provider`).
//! `operation_id` may be left out, and the server assigns one derived from what is
//! proposed ([`super::derived_id`]), so that a retried call is the same operation; an
//! agent may also pass its own (and the same one again). `tenant_id` may be left out by
//! a caller granted exactly one tenant.
//!
//! [`envelope`] only fills in what the tool implies and turns the arguments into the
//! intent.v1 object; reading it is `parse_intent`'s job, as for any intent. So a proposal
//! is refused for exactly the reasons, and with the codes, an intent on the queue is. The
//! arguments' types ([`Proposal`], [`TargetedProposal`], in `crate::members::arguments`) describe
//! them as JSON Schema (from the same payload types the reading uses); a test holds the
//! description and the reading in agreement.

use serde_json::{Map, Value};

use super::{Action, IntentError, SCHEMA};
use super::{DealCreatePayload, DealUpdatePayload, PaymentPayload, RefundPayload};
use crate::catalogue::Target;

pub use crate::members::arguments::{Proposal, TargetedProposal};

pub type PaymentProposal = Proposal<PaymentPayload>;
pub type RefundProposal = Proposal<RefundPayload>;
pub type DealCreateProposal = Proposal<DealCreatePayload>;
pub type DealUpdateProposal = TargetedProposal<DealUpdatePayload>;

/// The tool that proposes `action`: its wire name with `_` for `.` (`payment_create`).
pub fn tool_name(action: Action) -> &'static str {
    action.spec().tool.name
}

pub fn action_of_tool(name: &str) -> Option<Action> {
    Action::ALL.into_iter().find(|a| tool_name(*a) == name)
}

/// The provider that serves `action`, which the tool names for the agent.
pub fn provider_of(action: Action) -> &'static str {
    action.spec().provider.as_str()
}

/// Whether a proposal of `action` may carry `member`: the members every tool takes, and
/// `target` for an action that changes a named object.
fn takes(action: Action, member: &str) -> bool {
    const COMMON: &[&str] = &[
        "operation_id",
        "tenant_id",
        "payload",
        "policy_version",
        "data_version",
        "approval_ttl_seconds",
        "rationale",
        "supersedes",
    ];
    match action.spec().target {
        Target::Required(_) => member == "target" || COMMON.contains(&member),
        Target::Optional => COMMON.contains(&member),
    }
}

/// The intent.v1 object a proposal of `action` stands for. `assigned_id` is used when the
/// arguments carry no `operation_id` (absent or null), `default_tenant` when they carry no
/// `tenant_id` (the caller's only tenant; `None` when it has several). Refuses a member
/// the tool does not take, the implied ones included (an agent cannot turn a payment
/// tool into a refund); everything else is left to `parse_intent`.
pub fn envelope(
    action: Action,
    mut arguments: Map<String, Value>,
    assigned_id: &str,
    default_tenant: Option<&str>,
) -> Result<Map<String, Value>, IntentError> {
    for implied in ["schema", "action", "provider"] {
        if arguments.contains_key(implied) {
            return Err(IntentError::InvalidField {
                field: implied.to_owned(),
                problem: "is implied by the tool and may not be given".to_owned(),
            });
        }
    }
    if let Some(unknown) = arguments.keys().find(|k| !takes(action, k)) {
        // The member's name is the agent's text: named only when it is a plain name (as
        // every path a refusal names), so the agent learns which member to drop.
        let field = if crate::member_path::plain_name(unknown) {
            unknown.clone()
        } else {
            "arguments".to_owned()
        };
        return Err(IntentError::InvalidField {
            field,
            problem: "a member this tool does not take".to_owned(),
        });
    }
    if arguments.get("operation_id").is_none_or(Value::is_null) {
        arguments.insert("operation_id".to_owned(), Value::from(assigned_id));
    }
    if arguments.get("tenant_id").is_none_or(Value::is_null) {
        let Some(tenant) = default_tenant else {
            return Err(IntentError::InvalidField {
                field: "tenant_id".to_owned(),
                problem: "required: the caller acts for several tenants".to_owned(),
            });
        };
        arguments.insert("tenant_id".to_owned(), Value::from(tenant));
    }
    arguments.insert("schema".to_owned(), Value::from(SCHEMA));
    arguments.insert("action".to_owned(), Value::from(action.wire_name()));
    arguments.insert("provider".to_owned(), Value::from(provider_of(action)));
    Ok(arguments)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::parse_intent;

    const ASSIGNED: &str = "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8";

    fn payment_args() -> Map<String, Value> {
        json!({
            "payload": {"invoice_id": "inv_9182", "beneficiary_id": "vendor_77", "amount_minor": 1250000, "currency": "KZT"},
            "policy_version": "payments-v3",
            "data_version": "inv_9182@7",
            "approval_ttl_seconds": 3600,
        })
        .as_object()
        .unwrap()
        .clone()
    }

    fn read(envelope: Map<String, Value>) -> Result<crate::ValidIntent, IntentError> {
        parse_intent(&serde_json::to_vec(&Value::Object(envelope)).unwrap())
    }

    #[test]
    fn tool_names_round_trip() {
        for action in Action::ALL {
            assert_eq!(action_of_tool(tool_name(action)), Some(action));
            assert_eq!(tool_name(action), action.wire_name().replace('.', "_"));
        }
        assert_eq!(action_of_tool("payment.create"), None);
    }

    #[test]
    fn the_tool_fills_in_what_it_implies_and_an_assigned_id_and_the_only_tenant() {
        let e = envelope(
            Action::PaymentCreate,
            payment_args(),
            ASSIGNED,
            Some("org_482"),
        )
        .unwrap();
        let intent = read(e).unwrap();
        assert_eq!(intent.operation_id.as_str(), ASSIGNED);
        assert_eq!(intent.action, Action::PaymentCreate);
        assert_eq!(intent.snapshot.provider, "payments");
        assert_eq!(intent.snapshot.tenant_id, "org_482");
        assert_eq!(intent.snapshot.target, None);
    }

    #[test]
    fn the_agents_own_id_and_tenant_are_kept_and_null_means_absent() {
        let mut args = payment_args();
        args.insert(
            "operation_id".into(),
            json!("op_01JQ8R7D9M4KX2T3V4W5Y6Z7B9"),
        );
        args.insert("tenant_id".into(), json!("org_483"));
        let intent =
            read(envelope(Action::PaymentCreate, args, ASSIGNED, Some("org_482")).unwrap())
                .unwrap();
        assert_eq!(
            intent.operation_id.as_str(),
            "op_01JQ8R7D9M4KX2T3V4W5Y6Z7B9"
        );
        assert_eq!(intent.snapshot.tenant_id, "org_483");
        let mut args = payment_args();
        args.insert("operation_id".into(), Value::Null);
        let intent =
            read(envelope(Action::PaymentCreate, args, ASSIGNED, Some("org_482")).unwrap())
                .unwrap();
        assert_eq!(intent.operation_id.as_str(), ASSIGNED);
    }

    #[test]
    fn a_caller_of_several_tenants_must_name_one() {
        let e = envelope(Action::PaymentCreate, payment_args(), ASSIGNED, None).unwrap_err();
        assert_eq!((e.code(), field(&e)), ("invalid_field", "tenant_id"));
    }

    fn field(e: &IntentError) -> &str {
        match e {
            IntentError::InvalidField { field, .. } => field,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn implied_members_and_members_the_tool_does_not_take_are_refused() {
        for (member, value, expected) in [
            ("action", json!("refund.create"), "action"),
            ("provider", json!("payments"), "provider"),
            ("schema", json!("intent.v1"), "schema"),
            ("target", json!("deal_1"), "target"),
            ("amount_minor", json!(5), "amount_minor"),
            ("a b", json!(5), "arguments"),
        ] {
            let mut args = payment_args();
            args.insert(member.into(), value);
            let e = envelope(Action::PaymentCreate, args, ASSIGNED, Some("org_482")).unwrap_err();
            assert_eq!(
                (e.code(), field(&e)),
                ("invalid_field", expected),
                "{member}"
            );
        }
    }

    #[test]
    fn a_deal_update_takes_its_target_and_the_reading_judges_the_rest() {
        let args = json!({
            "target": "deal_7",
            "payload": {"expected_version": 3, "patch": {"stage": "won"}},
            "policy_version": "crm-v1", "data_version": "deal_7@3", "approval_ttl_seconds": 600,
        });
        let e = envelope(
            Action::CrmDealUpdate,
            args.as_object().unwrap().clone(),
            ASSIGNED,
            Some("org_482"),
        )
        .unwrap();
        let intent = read(e).unwrap();
        assert_eq!(
            (
                intent.snapshot.provider.as_str(),
                intent.snapshot.target.as_deref()
            ),
            ("crm", Some("deal_7"))
        );
        let mut zero = payment_args();
        zero["payload"]["amount_minor"] = json!(0);
        let e = read(envelope(Action::PaymentCreate, zero, ASSIGNED, Some("org_482")).unwrap())
            .unwrap_err();
        assert_eq!(
            (e.code(), field(&e)),
            ("invalid_field", "payload.amount_minor")
        );
    }
}
