//! Broker users of agent principals: who speaks on the queue door. `fleetctl` records a
//! principal's broker user (as the owner); prepare looks a message's validated `user_id`
//! up to learn which principal, for which tenants, submitted the intent.

use fleet_core::{Action, Role};
use tokio_postgres::Row;

use crate::component::Administer;
use crate::component::{IdentifyQueueSubmitters, StoreIntents};
use crate::StoreAs;
use crate::{Principal, StoreError};

/// The live principal whose broker user is `$1`, with its tenants: the one text both
/// [`SUBMITTER`] and [`QUEUE_INTAKE`] read it by.
macro_rules! submitter_select {
    () => {
        "
SELECT p.name, p.role,
       ARRAY(SELECT tenant_id FROM principal_tenants pt WHERE pt.principal = p.name ORDER BY tenant_id) AS tenants
FROM principals p
WHERE p.broker_user = $1 AND p.removed_at IS NULL"
    };
}

const SUBMITTER: &str = submitter_select!();

/// What the queue door reads before it judges an intent, in one statement (always one
/// row): the policy version in force for tenant `$2` and action `$3` (as
/// `StoreAs::policy_in_force`), and the live principal whose broker user is `$1` (as
/// [`SUBMITTER`]; none when `$1` is NULL). Each intent's first two reads, one round trip.
const QUEUE_INTAKE: &str = concat!(
    "
SELECT fleet_policy_in_force($2, $3) AS in_force, s.name, s.role, s.tenants
FROM (VALUES (1)) AS one
LEFT JOIN (",
    submitter_select!(),
    ") AS s ON true"
);

/// The principal of a [`SUBMITTER`] row (or a row whose principal columns are NULL: none).
fn principal_of(row: &Row) -> Option<Principal> {
    // The column only holds known roles (a CHECK); an unknown one speaks for nobody.
    let role = Role::parse(row.get::<_, Option<&str>>("role")?)?;
    Some(Principal {
        name: row.get("name"),
        role,
        tenants: row.get("tenants"),
    })
}

/// What recording a broker user for a principal did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrokerUserSet {
    /// Recorded (or it was already this one).
    Set,
    /// No live principal of that name.
    NoPrincipal,
    /// Another principal speaks as that broker user: nothing was written.
    Taken { by: String },
}

impl<R: IdentifyQueueSubmitters> StoreAs<R> {
    /// The live principal whose broker user is `broker_user`, with all its tenants.
    pub async fn queue_submitter(
        &self,
        broker_user: &str,
    ) -> Result<Option<Principal>, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(SUBMITTER).await?;
        let row = client.query_opt(&stmt, &[&broker_user]).await?;
        Ok(row.as_ref().and_then(principal_of))
    }
}

impl<R: IdentifyQueueSubmitters + StoreIntents> StoreAs<R> {
    /// The queue door's reads of one intent, in one round trip: the policy version in
    /// force for `tenant_id` and `action` (`None` when none is), and the live principal
    /// whose broker user is `broker_user` (`None` for no user, or one no principal speaks
    /// as).
    pub async fn queue_intake(
        &self,
        broker_user: Option<&str>,
        tenant_id: &str,
        action: Action,
    ) -> Result<(Option<String>, Option<Principal>), StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(QUEUE_INTAKE).await?;
        let row = client
            .query_one(&stmt, &[&broker_user, &tenant_id, &action.wire_name()])
            .await?;
        Ok((row.get("in_force"), principal_of(&row)))
    }
}

impl<R: Administer> StoreAs<R> {
    /// Records that `principal` speaks on the queue as `broker_user` (replacing any it had).
    pub async fn set_broker_user(
        &self,
        principal: &str,
        broker_user: &str,
    ) -> Result<BrokerUserSet, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        if let Some(row) = tx
            .query_opt(
                "SELECT name FROM principals WHERE broker_user = $1 AND name <> $2",
                &[&broker_user, &principal],
            )
            .await?
        {
            return Ok(BrokerUserSet::Taken { by: row.get(0) });
        }
        let updated = tx
            .execute(
                "UPDATE principals SET broker_user = $2 WHERE name = $1 AND removed_at IS NULL",
                &[&principal, &broker_user],
            )
            .await?;
        tx.commit().await?;
        Ok(if updated == 1 {
            BrokerUserSet::Set
        } else {
            BrokerUserSet::NoPrincipal
        })
    }

    /// The broker user `principal` speaks as, if any (removed principals have none).
    pub async fn broker_user_of(&self, principal: &str) -> Result<Option<String>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT broker_user FROM principals WHERE name = $1",
                &[&principal],
            )
            .await?;
        Ok(row.and_then(|r| r.get(0)))
    }
}
