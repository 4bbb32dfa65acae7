//! One claimed attempt: call the provider once (resending only what provably never left),
//! hold the lease meanwhile, then record the answer with the fence.

use fleet_core::payee::{payee_id, PayeeEvidence};
use fleet_core::reconcile::key_trusted;
use fleet_core::{AttemptOutcome, Effect, Outcome, Precondition, Reason, Status};
use fleet_runtime::metric_names as m;
use fleet_store::{AttemptRecord, ClaimedOperation, StoreError, TransitionOutcome};
use tokio::time::Instant;
use tracing::{error, info, warn};

use crate::answer::Answer;
use crate::call::Call;
use crate::handler::ExecuteHandler;
use crate::{lease, pause};

impl ExecuteHandler {
    pub(crate) async fn perform(
        &self,
        claimed: ClaimedOperation,
        claim_sent_at: Instant,
    ) -> Result<(), StoreError> {
        let row = &claimed.row;
        let op = row.operation_id.as_str();
        let fence = claimed.fence;
        if row.snapshot().hash() != row.payload_hash {
            // The stored snapshot no longer hashes to what was approved (the database
            // trigger was bypassed): never call; a person decides.
            error!(
                operation_id = op,
                fence,
                "stored snapshot does not match its approved hash; escalating without a call"
            );
            return self
                .escalate_without_call(
                    &claimed,
                    Reason::SnapshotHashMismatch,
                    AttemptOutcome::Unknown,
                )
                .await;
        }
        if row.signatures_required > 0 && !self.signatures_hold(row).await? {
            // Whatever the database was made to say, the approvers' own signatures do not
            // make the quorum: nothing is sent, and a person decides. The row is escalated,
            // so it is never claimed again, and no reconcile path calls for it.
            return self
                .escalate_without_call(
                    &claimed,
                    Reason::ApprovalSignatureInvalid,
                    AttemptOutcome::NotExecuted,
                )
                .await;
        }
        if let Some(mandate_id) = crate::mandate_check::mandate_of(row) {
            if !self.mandate_holds(row, mandate_id).await? {
                // The database was made to say a mandate approved it, but no signature of
                // its signer's covers it: nothing is sent, and a person decides.
                return self
                    .escalate_without_call(
                        &claimed,
                        Reason::ApprovalSignatureInvalid,
                        AttemptOutcome::NotExecuted,
                    )
                    .await;
            }
        }
        let Some(mut call) = self.call_of(row) else {
            // prepare validated this shape; reaching here is a bug, never a reason to guess.
            error!(operation_id = op, action = %row.action, "stored payload does not fit its action; escalating without a call");
            return self
                .escalate_without_call(
                    &claimed,
                    Reason::UnbuildableRequest,
                    AttemptOutcome::Unknown,
                )
                .await;
        };
        if call.spec.effect == Effect::KeyedCreate
            && row.attempts > 1
            && !self.key_still_trusted(&call, fence).await?
        {
            // The provider may have forgotten this key since its first use: a request now
            // could be a second effect. Only a lookup or a person may decide.
            warn!(
                operation_id = op,
                fence, "idempotency key past its retention; escalating without a call"
            );
            return self
                .escalate_without_call(
                    &claimed,
                    Reason::KeyRetentionPassed,
                    AttemptOutcome::NotExecuted,
                )
                .await;
        }
        if let Some((outcome, attempt, evidence)) =
            self.payer_changed_before_call(&call, row, fence).await?
        {
            return self.record(&claimed, &outcome, attempt, evidence).await;
        }
        // Under a mandate, the call holds it until its answer: a revocation waits for the
        // answer, or, committed first, stops the call here (migrations/0068).
        let hold = match crate::mandate_check::mandate_of(row) {
            None => None,
            Some(mandate_id) => match self.deps.store.hold_mandate(row.key(), fence).await? {
                Some(hold) => Some(hold),
                None => {
                    info!(
                        operation_id = op,
                        mandate_id, "the mandate was revoked before the call; nothing is sent"
                    );
                    let outcome = Outcome::NotExecuted {
                        reason: Reason::MandateRevoked,
                    };
                    let attempt = AttemptRecord {
                        detail: Some(Reason::MandateRevoked.as_str().into()),
                        ..AttemptRecord::new(AttemptOutcome::NotExecuted)
                    };
                    return self.record(&claimed, &outcome, attempt, None).await;
                }
            },
        };
        call.hold = hold.as_ref();
        info!(operation_id = op, action = %row.action, provider = %row.provider, fence, "claimed; calling the provider");
        pause::point(pause::BEFORE_PROVIDER_CALL).await;
        let started = Instant::now();
        let ttl = self.deps.settings.lease_ttl_ms;
        if started >= claim_sent_at + lease::give_up_after(ttl) {
            // Stalled between claim and call past the point where the lease is trusted:
            // nothing was sent, and nothing may be sent now.
            warn!(
                operation_id = op,
                fence, "lease no longer trusted before the call; not calling"
            );
            let record = AttemptRecord {
                detail: Some("lease_lost_before_call".into()),
                ..AttemptRecord::new(AttemptOutcome::NotExecuted)
            };
            self.deps
                .store
                .record_attempt(row.key(), fence, &record)
                .await?;
            return Ok(());
        }
        // The keeper runs on its own task (and takes its own pooled connection for each
        // renewal), so a slow call cannot delay a renewal.
        let mut keeper = tokio::spawn(lease::hold(
            self.deps.store.clone(),
            row.key().to_key(),
            fence,
            ttl,
            claim_sent_at,
        ));
        let answered = tokio::select! {
            biased;
            lost = &mut keeper => Err(lost.unwrap_or(lease::LeaseLost::RenewalTimedOut)),
            answered = self.call(&call, fence) => Ok(answered),
        };
        keeper.abort();
        if let Some(hold) = &hold {
            hold.release().await;
        }
        let (outcome, attempt) = match answered {
            Ok(answered) => answered?,
            Err(lost) => {
                // The call may have reached the provider: nothing is known, unless the
                // attempt's send mark still says nothing was sent (the claim was waiting
                // for its slot, or for a 429's wait). Without the lease this worker may not
                // move the row either way: reconcile takes it from here, and releases it
                // without a lookup when the mark proves nothing left.
                warn!(
                    operation_id = op,
                    fence,
                    reason = lost.as_str(),
                    "lease lost during the provider call; abandoning it"
                );
                metrics::counter!(m::LEASE_EXPIRED_TOTAL, "action" => row.action.wire_name())
                    .increment(1);
                self.deps
                    .store
                    .record_lost_claim(row.key(), fence, lost.as_str())
                    .await?;
                self.ring_reconcile(row.key()).await;
                return Ok(());
            }
        };
        pause::point(pause::AFTER_PROVIDER_RESPONSE).await;
        let labels = [
            ("provider", row.provider.as_str().to_owned()),
            ("action", row.action.wire_name().to_owned()),
            ("outcome", outcome.label().to_owned()),
        ];
        metrics::counter!(m::PROVIDER_CALLS_TOTAL, &labels).increment(1);
        metrics::histogram!(m::PROVIDER_CALL_DURATION_SECONDS, &labels)
            .record(started.elapsed().as_secs_f64());
        let (attempt, evidence) = match &outcome {
            Outcome::Conflict {
                on: Precondition::Payee,
                ..
            } => self.payee_changed(&call, attempt).await,
            _ => (attempt, None),
        };
        self.record(&claimed, &outcome, attempt, evidence).await?;
        pause::point(pause::AFTER_RECORD).await;
        Ok(())
    }

    /// Whether the key's first use (the operation's first attempt) is recent enough that
    /// the provider still deduplicates it, by the database clock.
    async fn key_still_trusted(&self, call: &Call<'_>, fence: i64) -> Result<bool, StoreError> {
        let ages = self.deps.store.attempt_ages_before(call.key, fence).await?;
        Ok(ages
            .oldest
            .is_none_or(|first_use| key_trusted(first_use, call.provider.contract())))
    }

    /// Sends nothing and hands the operation to a person: the row becomes `unknown`,
    /// escalated with `reason`, and the claim's attempt is recorded as `attempt_outcome`
    /// with `reason` as its detail.
    async fn escalate_without_call(
        &self,
        claimed: &ClaimedOperation,
        reason: Reason,
        attempt_outcome: AttemptOutcome,
    ) -> Result<(), StoreError> {
        let outcome = Outcome::Unknown {
            reason,
            escalate: true,
        };
        let attempt = AttemptRecord {
            detail: Some(reason.as_str().into()),
            ..AttemptRecord::new(attempt_outcome)
        };
        self.record(claimed, &outcome, attempt, None).await
    }

    /// The payee changed after the approval and the provider refused the payment: looks
    /// the payee up again (read-only) so that the people who decide next see what it is
    /// now. The new details go to the history row of the cancellation and, in short, to
    /// the attempt's detail; the masked account and fingerprint only.
    async fn payee_changed(
        &self,
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
                detail: Some(detail),
                ..attempt
            },
            Some(evidence),
        )
    }

    /// Records the attempt and moves the row, both fenced, in one transaction (shared
    /// with the answers recorded at the same time, see `batches.rs`).
    async fn record(
        &self,
        claimed: &ClaimedOperation,
        outcome: &Outcome,
        attempt: AttemptRecord,
        evidence: Option<serde_json::Value>,
    ) -> Result<(), StoreError> {
        let row = &claimed.row;
        let op = row.operation_id.as_str();
        let answer = Answer {
            op: row.key().to_key(),
            fence: claimed.fence,
            outcome: outcome.clone(),
            attempt,
            evidence,
        };
        match self.batches.record(answer).await? {
            TransitionOutcome::Moved { to, .. } => {
                info!(operation_id = op, fence = claimed.fence, outcome = outcome.label(), status = %to, "recorded");
                if let Outcome::Conflict { on, current } = outcome {
                    metrics::counter!(m::VERSION_CONFLICTS_TOTAL, "provider" => row.provider.as_str()).increment(1);
                    warn!(operation_id = op, conflict = on.code(), current = current.as_deref(), "precondition no longer holds: cancelled; a new intent and approval are needed");
                }
                if to == Status::Unknown {
                    self.ring_reconcile(row.key()).await;
                }
            }
            TransitionOutcome::Stale | TransitionOutcome::Refused(_) => {
                // A webhook or reconcile moved the row first; our attempt row still holds
                // what the provider said, for reconcile and the operators.
                warn!(
                    operation_id = op,
                    fence = claimed.fence,
                    outcome = outcome.label(),
                    "fenced out: the row moved; attempt recorded only"
                );
                metrics::counter!(m::FENCED_OUT_TOTAL, "action" => row.action.wire_name())
                    .increment(1);
            }
        }
        Ok(())
    }
}
