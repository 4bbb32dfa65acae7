//! How the places for waiting requests are shared: a cap for the whole process, a lower
//! one per tenant and a lower one again per principal, so that one agent (or one tenant)
//! holding many long-polls cannot take every place and leave the others none.
//! Pure bookkeeping: the API keeps one of these behind a lock.

use std::collections::HashMap;

/// The three caps, per principal ≤ per tenant ≤ total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareCaps {
    total: usize,
    per_tenant: usize,
    per_principal: usize,
}

impl ShareCaps {
    /// Refuses a cap of zero; a share above the whole is cut to the whole (lowering the
    /// total alone lowers every share with it).
    pub fn new(
        total: usize,
        per_tenant: usize,
        per_principal: usize,
    ) -> Result<ShareCaps, &'static str> {
        if total == 0 || per_tenant == 0 || per_principal == 0 {
            return Err("every cap must be at least 1");
        }
        let per_tenant = per_tenant.min(total);
        Ok(ShareCaps {
            total,
            per_tenant,
            per_principal: per_principal.min(per_tenant),
        })
    }
}

/// Why a place was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareRefusal {
    /// Every place of the process is taken.
    Full,
    /// The tenant holds its share.
    Tenant,
    /// The principal holds its share.
    Principal,
}

impl ShareRefusal {
    pub fn as_str(self) -> &'static str {
        match self {
            ShareRefusal::Full => "full",
            ShareRefusal::Tenant => "tenant",
            ShareRefusal::Principal => "principal",
        }
    }
}

/// The places taken, in all, by tenant and by principal. Only holders are kept: a
/// count that falls to zero is removed, so the maps stay as small as the waiting.
#[derive(Debug)]
pub struct WaitShares {
    caps: ShareCaps,
    taken: usize,
    tenants: HashMap<String, usize>,
    principals: HashMap<String, usize>,
}

impl WaitShares {
    pub fn new(caps: ShareCaps) -> WaitShares {
        WaitShares {
            caps,
            taken: 0,
            tenants: HashMap::new(),
            principals: HashMap::new(),
        }
    }

    /// Takes a place for `principal` waiting on an operation of `tenant`, if its shares
    /// allow; the narrowest refusal is reported (the principal's before the tenant's).
    pub fn take(&mut self, principal: &str, tenant: &str) -> Result<(), ShareRefusal> {
        let held = |m: &HashMap<String, usize>, k: &str| m.get(k).copied().unwrap_or(0);
        if held(&self.principals, principal) >= self.caps.per_principal {
            return Err(ShareRefusal::Principal);
        }
        if held(&self.tenants, tenant) >= self.caps.per_tenant {
            return Err(ShareRefusal::Tenant);
        }
        if self.taken >= self.caps.total {
            return Err(ShareRefusal::Full);
        }
        self.taken += 1;
        *self.tenants.entry(tenant.to_owned()).or_default() += 1;
        *self.principals.entry(principal.to_owned()).or_default() += 1;
        Ok(())
    }

    /// Gives back a place [`WaitShares::take`] granted.
    pub fn give_back(&mut self, principal: &str, tenant: &str) {
        self.taken = self.taken.saturating_sub(1);
        release(&mut self.tenants, tenant);
        release(&mut self.principals, principal);
    }

    pub fn taken(&self) -> usize {
        self.taken
    }
}

fn release(counts: &mut HashMap<String, usize>, key: &str) {
    if let Some(n) = counts.get_mut(key) {
        *n -= 1;
        if *n == 0 {
            counts.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_are_positive_and_a_share_is_cut_to_the_whole() {
        assert!(ShareCaps::new(10, 5, 0).is_err());
        assert!(ShareCaps::new(0, 5, 2).is_err());
        assert_eq!(ShareCaps::new(10, 5, 6), ShareCaps::new(10, 5, 5));
        assert_eq!(ShareCaps::new(1, 128, 32), ShareCaps::new(1, 1, 1));
    }

    #[test]
    fn one_principal_cannot_take_every_place() {
        let mut shares = WaitShares::new(ShareCaps::new(4, 3, 2).unwrap());
        assert_eq!(shares.take("greedy", "t1"), Ok(()));
        assert_eq!(shares.take("greedy", "t1"), Ok(()));
        assert_eq!(shares.take("greedy", "t1"), Err(ShareRefusal::Principal));
        assert_eq!(shares.take("other", "t1"), Ok(()));
        assert_eq!(shares.take("third", "t1"), Err(ShareRefusal::Tenant));
        assert_eq!(shares.take("third", "t2"), Ok(()));
        assert_eq!(shares.take("fourth", "t2"), Err(ShareRefusal::Full));
        assert_eq!(shares.taken(), 4);
    }

    #[test]
    fn a_place_given_back_is_free_again_and_forgotten_at_zero() {
        let mut shares = WaitShares::new(ShareCaps::new(2, 1, 1).unwrap());
        shares.take("a", "t1").unwrap();
        assert_eq!(shares.take("a", "t1"), Err(ShareRefusal::Principal));
        shares.give_back("a", "t1");
        assert_eq!(shares.taken(), 0);
        assert!(shares.principals.is_empty() && shares.tenants.is_empty());
        assert_eq!(shares.take("a", "t1"), Ok(()));
    }
}
