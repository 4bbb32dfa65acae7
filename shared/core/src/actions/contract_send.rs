//! `contract.send`: send a contract (an envelope made from a template, for one recipient)
//! through the e-signature provider. A create under an idempotency key the provider keeps
//! for one hour only; sending happens later, announced by `envelope.sent` /
//! `envelope.delivery_failed` webhooks and visible on the envelope. Past the key's
//! retention nothing is sent on the key again: only a lookup (by `external_ref`) or a
//! person decides, exactly as for a payment past its key's retention.
//!
//! The snapshot names the recipient by its id in the customer's own system, never by an
//! e-mail address or a name: what a person approves, and what the fleet stores and logs,
//! holds no contact data.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::Value;

use crate::action_spec::{
    Action, ActionPayload, ActionSpec, Behaviour, Effect, Subject, Target, ToolText, WebhookSpec,
};
use crate::actions::search::read_search;
use crate::catalogue::provider_spec;
use crate::headline::Headline;
use crate::intent_error::IntentError;
use crate::intent_limits::MAX_TEXT_CHARS;
use crate::lookup::{Found, Reading};
use crate::members::arguments::Proposal;
use crate::members::checks::{check_id, check_text};
use crate::members::schemas::{identifier, text};
use crate::outcome::{classify_keyed_create, CallResult, Outcome};

/// A recipient id: letters, digits and `_ . : -`, with at least one digit. An e-mail
/// address (`@`) or a name (spaces, letters only) is refused.
pub const RECIPIENT_ID_PATTERN: &str = "^[A-Za-z0-9_.:-]*[0-9][A-Za-z0-9_.:-]*$";
/// A SHA-256 in lower-case hex.
pub const SHA256_PATTERN: &str = "^[0-9a-f]{64}$";

/// `contract.send`: send the contract made from a template to one recipient.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct ContractSendPayload {
    /// The provider's template the contract is made from.
    #[schemars(schema_with = "identifier")]
    pub template_id: String,
    /// The recipient's id in your own system (e.g. `cust_1042`): never an e-mail address
    /// or a name. Letters, digits and `_ . : -`, with at least one digit.
    #[schemars(schema_with = "recipient_id")]
    pub recipient_id: String,
    /// The SHA-256 of the document sent, 64 lower-case hex digits: what the person
    /// approves is this exact document.
    #[schemars(schema_with = "sha256")]
    pub document_sha256: String,
    /// The subject of the envelope the recipient receives.
    #[schemars(schema_with = "text")]
    pub subject: String,
}

fn recipient_id(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "minLength": 1, "maxLength": MAX_TEXT_CHARS, "pattern": RECIPIENT_ID_PATTERN})
}

fn sha256(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "pattern": SHA256_PATTERN})
}

fn is_recipient_id(s: &str) -> bool {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "_.:-".contains(c);
    s.chars().count() <= MAX_TEXT_CHARS
        && s.chars().all(allowed)
        && s.chars().any(|c| c.is_ascii_digit())
}

fn is_sha256(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// An envelope of the reference e-signature API: `created` until the provider sent it.
fn envelope_found(envelope: &Value) -> Option<Found> {
    let external_id = envelope.get("id")?.as_str()?.to_owned();
    match envelope.get("status")?.as_str()? {
        "sent" => Some(Found::Succeeded { external_id }),
        "created" => Some(Found::Pending { external_id }),
        "delivery_failed" => {
            let code = envelope
                .get("failure_code")
                .and_then(Value::as_str)
                .unwrap_or("delivery_failed")
                .to_owned();
            Some(Found::Failed { external_id, code })
        }
        _ => None,
    }
}

impl ActionPayload for ContractSendPayload {
    type Proposal = Proposal<ContractSendPayload>;

    fn check(&self) -> Result<(), IntentError> {
        check_id("payload.template_id", &self.template_id)?;
        if !is_recipient_id(&self.recipient_id) {
            return Err(IntentError::field("payload.recipient_id", "must be an id in your system (letters, digits, _ . : -, with a digit), never an e-mail address or a name"));
        }
        if !is_sha256(&self.document_sha256) {
            return Err(IntentError::field(
                "payload.document_sha256",
                "must be a SHA-256 in 64 lower-case hex digits",
            ));
        }
        check_text("payload.subject", &self.subject)
    }

    fn describe(&self, _target: Option<&str>) -> Option<Headline> {
        Some(Headline::new(format!(
            "Send contract template {} to recipient {}",
            self.template_id, self.recipient_id
        )))
    }

    /// `POST /v1/envelopes`: `201 created` is accepted (the sending follows).
    fn classify(&self, call: &CallResult, _subject: &Subject<'_>) -> Outcome {
        classify_keyed_create(call, envelope_found)
    }

    fn read_lookup(&self, subject: &Subject<'_>, via: &str, objects: &[Value]) -> Reading {
        read_search(subject, via, objects, "external_ref", envelope_found)
    }
}

pub const SPEC: ActionSpec = ActionSpec {
    action: Action::ContractSend,
    wire_name: "contract.send",
    provider: provider_spec::ESIGN.name,
    target: Target::Optional,
    effect: Effect::KeyedCreate,
    has_amount: false,
    payee: Some("recipient_id"),
    objects: &[],
    webhook: Some(WebhookSpec { object: "envelope", succeeded: "sent", failed: "delivery_failed", pending: &["created"], reference_field: "external_ref" }),
    tool: ToolText {
        name: "contract_send",
        title: "Propose sending a contract",
        what: "Propose sending a contract made from a template to one recipient (contract.send at the \
               e-signature provider). Name the recipient by its id in your system, never by an e-mail \
               address or a name, and give the document's SHA-256. The provider keeps its idempotency \
               key one hour: approval_ttl_seconds must stay under 3,540.",
    },
    behaviour: Behaviour::of::<ContractSendPayload>(),
};

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::lookup::Lookup;
    use crate::outcome::{answer, NoAnswerKind};
    use crate::Reason;

    const OP: &str = "op_01JQ8R7D9M4KX2T3V4W5Y6Z7A8";
    const DOC: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    fn contract() -> ContractSendPayload {
        serde_json::from_value(json!({"template_id": "tpl_msa_v3", "recipient_id": "cust_1042", "document_sha256": DOC, "subject": "Master services agreement"})).unwrap()
    }

    fn classify(call: &CallResult) -> Outcome {
        let payload = json!({});
        contract().classify(
            call,
            &Subject {
                reference: OP,
                target: None,
                payload: &payload,
            },
        )
    }

    #[test]
    fn a_created_envelope_is_accepted_and_its_sending_settles_it() {
        let created = json!({"id": "env_1", "status": "created", "external_ref": OP});
        assert_eq!(
            classify(&answer(201, false, created.clone())),
            Outcome::Accepted {
                external_id: Some("env_1".into())
            }
        );
        assert_eq!(
            classify(&answer(201, true, created)),
            Outcome::Accepted {
                external_id: Some("env_1".into())
            }
        );
        let sent = json!({"id": "env_1", "status": "sent"});
        assert_eq!(
            classify(&answer(201, false, sent)),
            Outcome::Succeeded {
                external_id: "env_1".into()
            }
        );
        let bounced = json!({"id": "env_1", "status": "delivery_failed", "failure_code": "recipient_unreachable"});
        assert_eq!(
            classify(&answer(201, false, bounced)),
            Outcome::Failed {
                code: "recipient_unreachable".into()
            }
        );
    }

    #[test]
    fn the_key_is_honoured_as_the_payments_api_honours_it() {
        let reused =
            json!({"error": {"type": "idempotency_error", "code": "idempotency_key_reused"}});
        assert_eq!(
            classify(&answer(400, false, reused)),
            Outcome::Unknown {
                reason: Reason::IdempotencyKeyReused,
                escalate: true
            }
        );
        let in_use =
            json!({"error": {"type": "idempotency_error", "code": "idempotency_key_in_use"}});
        assert!(matches!(
            classify(&answer(409, false, in_use)),
            Outcome::Unknown {
                escalate: false,
                ..
            }
        ));
        assert_eq!(
            classify(&answer(500, true, Value::Null)),
            Outcome::Unknown {
                reason: Reason::HttpReplayed(500),
                escalate: false
            }
        );
        assert!(matches!(
            classify(&CallResult::NoAnswer {
                kind: NoAnswerKind::Reset
            }),
            Outcome::Unknown { .. }
        ));
        let invalid = json!({"error": {"type": "invalid_request", "code": "template_missing"}});
        assert_eq!(
            classify(&answer(400, false, invalid)),
            Outcome::Failed {
                code: "template_missing".into()
            }
        );
        assert!(matches!(
            classify(&answer(
                201,
                false,
                json!({"id": "env_1", "status": "weird"})
            )),
            Outcome::Unknown { .. }
        ));
    }

    #[test]
    fn a_search_counts_only_envelopes_with_our_external_ref() {
        let payload = json!({});
        let subject = Subject {
            reference: OP,
            target: None,
            payload: &payload,
        };
        let objects = [
            json!({"id": "env_1", "status": "sent", "external_ref": OP}),
            json!({"id": "env_2", "status": "sent", "external_ref": "op_other"}),
        ];
        let read = contract().read_lookup(&subject, "external_ref", &objects);
        assert_eq!(
            read.lookup,
            Lookup::Matches(vec![Found::Succeeded {
                external_id: "env_1".into()
            }])
        );
        let pending = [json!({"id": "env_1", "status": "created", "external_ref": OP})];
        assert_eq!(
            contract()
                .read_lookup(&subject, "external_ref", &pending)
                .lookup,
            Lookup::Matches(vec![Found::Pending {
                external_id: "env_1".into()
            }])
        );
    }

    #[test]
    fn the_recipient_is_an_id_never_an_address_or_a_name_and_the_document_a_sha256() {
        assert!(contract().check().is_ok());
        for id in ["cust_1042", "CUST-1042", "12345", "acct:9.1"] {
            assert!(
                ContractSendPayload {
                    recipient_id: id.into(),
                    ..contract()
                }
                .check()
                .is_ok(),
                "{id}"
            );
        }
        for bad in ["jane@example.com", "Jane Doe", "JaneDoe", "", "cust 1042"] {
            assert!(
                ContractSendPayload {
                    recipient_id: bad.into(),
                    ..contract()
                }
                .check()
                .is_err(),
                "{bad:?}"
            );
        }
        for bad in [&DOC.to_uppercase(), &DOC[..63], "sha256:9f86"] {
            assert!(
                ContractSendPayload {
                    document_sha256: bad.to_string(),
                    ..contract()
                }
                .check()
                .is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_approver_reads_what_goes_to_whom() {
        assert_eq!(
            contract().describe(None).map(|h| h.plain()).as_deref(),
            Some("Send contract template tpl_msa_v3 to recipient cust_1042")
        );
    }
}
