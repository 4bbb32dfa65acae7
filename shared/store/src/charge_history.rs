//! What a charge's risk cues are judged over (`fleet_core::risk::charge`): what a tenant's
//! succeeded charges say about one card and one customer, read from the aggregates the
//! database keeps as each charge succeeds (`migrations/0065_charge_aggregates.sql`), by
//! primary key: a constant number of rows whatever the history. Read at intake.

use fleet_core::risk::ChargedBefore;

use crate::component::StoreIntents;
use crate::StoreAs;
use crate::StoreError;

/// Two primary-key reads in one statement (always one row): the card's count, the
/// customer's amounts in the charge's currency. `$2` NULL (no card described) matches no
/// card.
pub const CHARGED_BEFORE: &str = "
SELECT c.charges AS charges_to_card, a.latest_amounts
FROM (VALUES (1)) AS one
LEFT JOIN charged_cards c ON c.tenant_id = $1 AND c.card_fingerprint = $2
LEFT JOIN charged_customer_amounts a ON a.tenant_id = $1 AND a.customer = $3 AND a.currency = $4";

impl<R: StoreIntents> StoreAs<R> {
    /// What `tenant`'s succeeded charges say about the card `fingerprint` and `customer`'s
    /// amounts in `currency`.
    pub async fn charged_before(
        &self,
        tenant: &str,
        fingerprint: Option<&str>,
        customer: &str,
        currency: &str,
    ) -> Result<ChargedBefore, StoreError> {
        let client = self.client().await?;
        let read = client.prepare_cached(CHARGED_BEFORE).await?;
        let row = client
            .query_one(&read, &[&tenant, &fingerprint, &customer, &currency])
            .await?;
        Ok(ChargedBefore {
            charges_to_card: row
                .get::<_, Option<i64>>("charges_to_card")
                .map_or(0, |n| u64::try_from(n).unwrap_or(0)),
            latest_amounts: row
                .get::<_, Option<Vec<i64>>>("latest_amounts")
                .unwrap_or_default(),
        })
    }
}
