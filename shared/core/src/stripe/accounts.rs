//! Tenants with a Stripe connected account of their own (`PAYMENTS_STRIPE_ACCOUNTS`): every
//! request the fleet makes at Stripe for such a tenant carries `Stripe-Account: acct_…`, so
//! Stripe executes it inside that account, and an event Stripe delivers from a connected
//! account (its top-level `account`) may only move an operation of the tenant it belongs
//! to. A tenant not named here is served on the platform's own account.
//!
//! The setting is a comma-separated list of `tenant=acct_…`. One tenant has at most one
//! account and one account belongs to at most one tenant: an account shared by two tenants
//! would let one tenant's agent refund the other's payments, and an event from it could
//! not say whose operation it is about. Pure: the setting is read by `fleet_runtime`.
//!
//! Stripe's reference: <https://docs.stripe.com/connect/authentication#stripe-account-header>,
//! <https://docs.stripe.com/connect/webhooks>.

use std::collections::BTreeMap;

use crate::stripe::transfer::destination;

/// The header that makes a request act inside a connected account.
pub const ACCOUNT_HEADER: &str = "Stripe-Account";

/// Longest tenant id the setting takes.
const MAX_TENANT_CHARS: usize = 128;

/// Each tenant's connected account (none for a tenant served on the platform's account).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectedAccounts {
    by_tenant: BTreeMap<String, String>,
}

/// Why `PAYMENTS_STRIPE_ACCOUNTS` cannot be read; the message names the entry (tenant ids
/// and account ids are not secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccountsError {
    #[error("entry {0:?} is not tenant=acct_…")]
    Entry(String),
    #[error("tenant {0:?} is not a tenant id (1 to 128 characters, no spaces, '=' or ',')")]
    Tenant(String),
    #[error("{0:?} is not a Stripe account id (acct_ followed by letters and digits)")]
    Account(String),
    #[error("tenant {0:?} is named twice")]
    TenantTwice(String),
    #[error("account {0:?} is given to two tenants")]
    AccountTwice(String),
}

impl ConnectedAccounts {
    /// Reads `tenant=acct_…[,tenant=acct_…]`; blanks around entries are ignored and an
    /// empty setting names no tenant.
    pub fn parse(raw: &str) -> Result<ConnectedAccounts, AccountsError> {
        let mut by_tenant = BTreeMap::new();
        for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let Some((tenant, account)) = entry.split_once('=') else {
                return Err(AccountsError::Entry(entry.to_owned()));
            };
            let (tenant, account) = (tenant.trim(), account.trim());
            let tenant_ok = !tenant.is_empty()
                && tenant.chars().count() <= MAX_TENANT_CHARS
                && !tenant.contains(|c: char| c.is_whitespace() || c == '=' || c == ',');
            if !tenant_ok {
                return Err(AccountsError::Tenant(tenant.to_owned()));
            }
            if destination(account).is_none() {
                return Err(AccountsError::Account(account.to_owned()));
            }
            if by_tenant.values().any(|a| a == account) {
                return Err(AccountsError::AccountTwice(account.to_owned()));
            }
            if by_tenant
                .insert(tenant.to_owned(), account.to_owned())
                .is_some()
            {
                return Err(AccountsError::TenantTwice(tenant.to_owned()));
            }
        }
        Ok(ConnectedAccounts { by_tenant })
    }

    /// The connected account `tenant`'s requests act in; `None`: the platform's own.
    pub fn of(&self, tenant: &str) -> Option<&str> {
        self.by_tenant.get(tenant).map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.by_tenant.is_empty()
    }

    /// Whether an event delivered from `event_account` (its top-level `account`; `None`
    /// for the platform's own events) may move an operation of `tenant`: only when it comes
    /// from the very account the tenant's requests act in.
    pub fn admits(&self, event_account: Option<&str>, tenant: &str) -> bool {
        self.of(tenant) == event_account
    }

    /// Whether some tenant's requests act in `account`.
    pub fn knows(&self, account: &str) -> bool {
        self.by_tenant.values().any(|a| a == account)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tenant_has_at_most_one_account_and_each_account_one_tenant() {
        let accounts = ConnectedAccounts::parse(" acme=acct_1Acme , globex=acct_2Globex,").unwrap();
        assert_eq!(accounts.of("acme"), Some("acct_1Acme"));
        assert_eq!(accounts.of("initech"), None);
        assert!(accounts.knows("acct_2Globex") && !accounts.knows("acct_9"));
        assert!(ConnectedAccounts::parse("").unwrap().is_empty());
        for (raw, error) in [
            ("acme", AccountsError::Entry("acme".into())),
            ("=acct_1", AccountsError::Tenant("".into())),
            ("ac me=acct_1", AccountsError::Tenant("ac me".into())),
            ("acme=acct_", AccountsError::Account("acct_".into())),
            ("acme=pk_live_1", AccountsError::Account("pk_live_1".into())),
            (
                "acme=acct_1,acme=acct_2",
                AccountsError::TenantTwice("acme".into()),
            ),
            (
                "acme=acct_1,globex=acct_1",
                AccountsError::AccountTwice("acct_1".into()),
            ),
        ] {
            assert_eq!(ConnectedAccounts::parse(raw), Err(error), "{raw}");
        }
    }

    #[test]
    fn an_event_moves_only_operations_of_the_tenant_of_its_account() {
        let accounts = ConnectedAccounts::parse("acme=acct_1Acme").unwrap();
        assert!(accounts.admits(Some("acct_1Acme"), "acme"));
        // The platform's own event is not about a tenant with an account of its own …
        assert!(!accounts.admits(None, "acme"));
        // … and a connected account's event is about no other tenant.
        assert!(!accounts.admits(Some("acct_1Acme"), "globex"));
        assert!(!accounts.admits(Some("acct_9Other"), "globex"));
        assert!(accounts.admits(None, "globex"));
    }
}
