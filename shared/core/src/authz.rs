//! Authorization, in one place: may this principal do this to this operation? Every route
//! of the HTTP API (and any other door a person or a program comes through) asks here and
//! nowhere else, so the rules cannot drift apart between handlers.
//!
//! The rules:
//! - a role permits a fixed set of actions ([`Role::may`]): agents submit, approvers
//!   approve and reject, operators resolve, dispute and ask for a reconciliation, admins
//!   manage principals and tokens; every role reads;
//! - tenant scope: an operation outside the principal's tenants does not exist for it
//!   (404, never 403, so nobody learns which ids another tenant uses); an intent for a
//!   tenant not granted is refused (403, nothing exists yet to hide);
//! - maker-checker: the principal that submitted an operation never approves it, whatever
//!   role it holds when it tries.
//!
//! The checks run in that order: the role first (it needs no lookup and reveals nothing),
//! then the tenant, then maker-checker. Decisions ask [`may_act_on`] with the operation's
//! facts; reads ask [`may`] for the role and apply the same tenant rule in their query, so
//! a listing never even reads another tenant's rows.

use std::fmt;

use crate::access::Role;
use crate::by_name::display_by_name;

/// What a request asks to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApiAction {
    SubmitIntent,
    ReadOperations,
    Approve,
    Reject,
    Resolve,
    Dispute,
    Reconcile,
    /// Principals and their tokens.
    ManageAccess,
}

impl ApiAction {
    pub const ALL: [ApiAction; 8] = [
        ApiAction::SubmitIntent,
        ApiAction::ReadOperations,
        ApiAction::Approve,
        ApiAction::Reject,
        ApiAction::Resolve,
        ApiAction::Dispute,
        ApiAction::Reconcile,
        ApiAction::ManageAccess,
    ];
}

impl Role {
    /// Whether this role may do `what` at all (tenants and maker-checker come on top:
    /// [`may_submit`], [`may_act_on`]).
    pub fn may(self, what: ApiAction) -> bool {
        match what {
            // Only agents propose: whoever approves never also proposes through the API.
            ApiAction::SubmitIntent => self == Role::Agent,
            ApiAction::ReadOperations => match self {
                Role::Agent | Role::Approver | Role::Operator | Role::Admin => true,
            },
            ApiAction::Approve | ApiAction::Reject => self == Role::Approver,
            ApiAction::Resolve | ApiAction::Dispute | ApiAction::Reconcile => {
                self == Role::Operator
            }
            ApiAction::ManageAccess => self == Role::Admin,
        }
    }
}

/// What is done to one existing operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OperationAction {
    Read,
    Approve,
    Reject,
    Resolve,
    Dispute,
    Reconcile,
}

impl OperationAction {
    pub const ALL: [OperationAction; 6] = [
        OperationAction::Read,
        OperationAction::Approve,
        OperationAction::Reject,
        OperationAction::Resolve,
        OperationAction::Dispute,
        OperationAction::Reconcile,
    ];

    pub fn api_action(self) -> ApiAction {
        match self {
            OperationAction::Read => ApiAction::ReadOperations,
            OperationAction::Approve => ApiAction::Approve,
            OperationAction::Reject => ApiAction::Reject,
            OperationAction::Resolve => ApiAction::Resolve,
            OperationAction::Dispute => ApiAction::Dispute,
            OperationAction::Reconcile => ApiAction::Reconcile,
        }
    }
}

/// Who asks: an authenticated principal, as the rules see it.
#[derive(Debug, Clone, Copy)]
pub struct Actor<'a> {
    pub name: &'a str,
    pub role: Role,
    pub tenants: &'a [String],
}

impl Actor<'_> {
    pub fn acts_for(&self, tenant_id: &str) -> bool {
        self.tenants.iter().any(|t| t == tenant_id)
    }
}

/// What the rules need to know about the operation acted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperationFacts<'a> {
    pub tenant_id: &'a str,
    /// The principal that submitted it (none when it came through the queue).
    pub submitted_by: Option<&'a str>,
}

/// Why a request is refused. [`Denial::code`] is what the caller is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Denial {
    /// 403: the role does not permit the action.
    RoleNotAllowed,
    /// 403: an intent for a tenant the principal was not granted.
    TenantNotGranted,
    /// 404: no such operation among the principal's tenants (another tenant's operation
    /// and one that does not exist are the same answer).
    NotFound,
    /// 403: the principal submitted this operation and may not also approve it.
    SubmitterCannotApprove,
    /// 403: the deployment's records (the principals table: role and tenants) do not make
    /// the principal a live approver of the operation's tenant, whatever its session says
    /// (an ID token's access claims): the database counts only those approvals.
    NotRecordedApprover,
    /// 409: the id names an operation in several of the principal's tenants (ids are
    /// unique per tenant); the caller names the tenant (`?tenant=`).
    Ambiguous,
}

impl Denial {
    pub fn code(self) -> &'static str {
        match self {
            Denial::RoleNotAllowed => "role_not_allowed",
            Denial::TenantNotGranted => "tenant_not_granted",
            Denial::NotFound => "not_found",
            Denial::SubmitterCannotApprove => "submitter_cannot_approve",
            Denial::NotRecordedApprover => "not_recorded_approver",
            Denial::Ambiguous => "operation_id_ambiguous",
        }
    }

    /// Whether the answer says "does not exist" rather than "not allowed".
    pub fn is_not_found(self) -> bool {
        self == Denial::NotFound
    }
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// May `who` do `what`, which involves no particular operation or tenant (a listing,
/// which is scoped to the principal's tenants by its query; managing access)?
pub fn may(who: &Actor<'_>, what: ApiAction) -> Result<(), Denial> {
    if who.role.may(what) {
        Ok(())
    } else {
        Err(Denial::RoleNotAllowed)
    }
}

/// May `who` submit an intent for `tenant_id`?
pub fn may_submit(who: &Actor<'_>, tenant_id: &str) -> Result<(), Denial> {
    may(who, ApiAction::SubmitIntent)?;
    if who.acts_for(tenant_id) {
        Ok(())
    } else {
        Err(Denial::TenantNotGranted)
    }
}

/// May `who` do `what` to the operation `op` (`None`: there is no such operation)?
pub fn may_act_on(
    who: &Actor<'_>,
    what: OperationAction,
    op: Option<&OperationFacts<'_>>,
) -> Result<(), Denial> {
    may(who, what.api_action())?;
    let op = op
        .filter(|op| who.acts_for(op.tenant_id))
        .ok_or(Denial::NotFound)?;
    match what {
        OperationAction::Approve if op.submitted_by == Some(who.name) => {
            Err(Denial::SubmitterCannotApprove)
        }
        OperationAction::Approve
        | OperationAction::Read
        | OperationAction::Reject
        | OperationAction::Resolve
        | OperationAction::Dispute
        | OperationAction::Reconcile => Ok(()),
    }
}

/// Which operation `who` means by an id (docs/design.md#tenant-boundaries). Ids are unique
/// per tenant only: `holders` are the tenants whose operations carry the id (in any
/// order; another tenant's counts for nothing), `asked` the tenant the caller named, if
/// any. One of the caller's tenants holds it → that tenant; none (or the named tenant is
/// not the caller's, or does not hold it) → not found, exactly as a free id; several and
/// none named → [`Denial::Ambiguous`].
pub fn locate<'h>(
    who: &Actor<'_>,
    asked: Option<&str>,
    holders: &'h [String],
) -> Result<&'h str, Denial> {
    let mut mine = holders
        .iter()
        .filter(|t| who.acts_for(t) && asked.is_none_or(|a| a == t.as_str()));
    match (mine.next(), mine.next()) {
        (None, _) => Err(Denial::NotFound),
        (Some(one), None) => Ok(one),
        (Some(_), Some(_)) => Err(Denial::Ambiguous),
    }
}

/// How a principal proved who it is, recorded with every decision it makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SignIn {
    /// A bearer token (programs, the CLI).
    Token,
    /// An OpenID Connect sign-in (people, in a browser).
    Oidc,
}

impl SignIn {
    pub const ALL: [SignIn; 2] = [SignIn::Token, SignIn::Oidc];

    pub fn as_str(self) -> &'static str {
        match self {
            SignIn::Token => "token",
            SignIn::Oidc => "oidc",
        }
    }

    pub fn parse(s: &str) -> Option<SignIn> {
        SignIn::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

display_by_name!(SignIn);

/// The principal behind a decision and how it signed in: what the decision's rows record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decider<'a> {
    pub name: &'a str,
    pub signed_in_with: SignIn,
}

impl<'a> Decider<'a> {
    pub fn new(name: &'a str, signed_in_with: SignIn) -> Self {
        Decider {
            name,
            signed_in_with,
        }
    }
}

#[cfg(test)]
mod tests;
