//! A payment the provider refused because its payee changed after the approval: the
//! payee is looked up again (read-only) so that the people who decide next see what it
//! is now.

use fleet_core::attempt_record::AttemptDetail;
use fleet_core::payee::{payee_id, PayeeEvidence};
use fleet_store::AttemptRecord;
use tracing::warn;

use crate::call::Call;

/// The payee changed after the approval and the provider refused the payment: looks
/// the payee up again (read-only) so that the people who decide next see what it is
/// now. The new details go to the history row of the cancellation and, in short, to
/// the attempt's detail; the masked account and fingerprint only.
pub(crate) async fn payee_changed(
    call: &Call<'_>,
    attempt: AttemptRecord,
) -> (AttemptRecord, Option<serde_json::Value>) {
    let approved = call.op.payee_version;
    let id = payee_id(call.spec.payee, call.op.subject.payload).unwrap_or_default();
    let answer = call.provider.look_up_payee(id, None).await;
    let now = match answer {
        Some(answer) => PayeeEvidence::of_lookup(
            id,
            answer.as_ref().map(Option::as_ref).map_err(|_| ()),
            chrono::Utc::now(),
        ),
        None => return (attempt, None),
    };
    let detail = match now.found() {
        Some(p) => format!(
            "payee changed after approval: version {} → {}, account {} ({})",
            approved.map_or("-".into(), |v| v.to_string()),
            p.version,
            p.account.masked,
            p.account.fingerprint
        ),
        None => "payee changed after approval; it cannot be looked up now".to_owned(),
    };
    warn!(
        operation_id = call.key.operation_id,
        approved_version = approved,
        current_version = now.version(),
        "{detail}"
    );
    let evidence = serde_json::json!({
        "payee_changed": {"approved_version": approved, "now": now.to_json()}
    });
    (
        AttemptRecord {
            detail: Some(AttemptDetail::Words { text: detail }.to_text()),
            ..attempt
        },
        Some(evidence),
    )
}
