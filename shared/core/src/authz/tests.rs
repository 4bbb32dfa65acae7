use super::*;

const ME: &str = "alice";
const SOMEONE_ELSE: &str = "billing-bot";
const MINE: &str = "org_482";
const THEIRS: &str = "org_999";

/// The permissions each role has, written out as data (not derived from `Role::may`).
fn granted(role: Role) -> &'static [ApiAction] {
    match role {
        Role::Agent => &[ApiAction::SubmitIntent, ApiAction::ReadOperations],
        Role::Approver => &[
            ApiAction::ReadOperations,
            ApiAction::Approve,
            ApiAction::Reject,
        ],
        Role::Operator => &[
            ApiAction::ReadOperations,
            ApiAction::Resolve,
            ApiAction::Dispute,
            ApiAction::Reconcile,
        ],
        Role::Admin => &[ApiAction::ReadOperations, ApiAction::ManageAccess],
    }
}

fn tenants() -> Vec<String> {
    vec![MINE.to_owned(), "org_483".to_owned()]
}

fn actor(role: Role, tenants: &[String]) -> Actor<'_> {
    Actor {
        name: ME,
        role,
        tenants,
    }
}

#[test]
fn each_role_may_exactly_what_it_was_granted() {
    for role in Role::ALL {
        for what in ApiAction::ALL {
            assert_eq!(
                role.may(what),
                granted(role).contains(&what),
                "{role} / {what:?}"
            );
        }
    }
}

#[test]
fn every_role_action_tenant_and_submitter_combination_is_decided_as_specified() {
    let tenants = tenants();
    // Every kind of operation a request can name.
    let operations: Vec<Option<OperationFacts<'_>>> = [MINE, THEIRS]
        .into_iter()
        .flat_map(|tenant_id| {
            [None, Some(ME), Some(SOMEONE_ELSE)]
                .into_iter()
                .map(move |submitted_by| {
                    Some(OperationFacts {
                        tenant_id,
                        submitted_by,
                    })
                })
        })
        .chain([None])
        .collect();
    let mut decided = 0;
    for role in Role::ALL {
        let who = actor(role, &tenants);
        for what in OperationAction::ALL {
            for op in &operations {
                let expected = if !granted(role).contains(&what.api_action()) {
                    Err(Denial::RoleNotAllowed)
                } else if op.is_none_or(|op| op.tenant_id != MINE) {
                    Err(Denial::NotFound)
                } else if what == OperationAction::Approve
                    && op.is_some_and(|op| op.submitted_by == Some(ME))
                {
                    Err(Denial::SubmitterCannotApprove)
                } else {
                    Ok(())
                };
                assert_eq!(
                    may_act_on(&who, what, op.as_ref()),
                    expected,
                    "{role} {what:?} on {op:?}"
                );
                decided += 1;
            }
        }
    }
    assert_eq!(decided, 4 * 6 * 7);
}

#[test]
fn the_submitter_never_approves_its_own_operation_even_as_an_approver() {
    let tenants = tenants();
    let own = OperationFacts {
        tenant_id: MINE,
        submitted_by: Some(ME),
    };
    let approver = actor(Role::Approver, &tenants);
    assert_eq!(
        may_act_on(&approver, OperationAction::Approve, Some(&own)),
        Err(Denial::SubmitterCannotApprove)
    );
    // Rejecting (withdrawing) its own operation is not a second pair of eyes, and allowed.
    assert_eq!(
        may_act_on(&approver, OperationAction::Reject, Some(&own)),
        Ok(())
    );
    // An agent is refused by its role before maker-checker is even asked.
    assert_eq!(
        may_act_on(
            &actor(Role::Agent, &tenants),
            OperationAction::Approve,
            Some(&own)
        ),
        Err(Denial::RoleNotAllowed)
    );
    // Another approver of the same tenant may.
    let colleague = Actor {
        name: "bob",
        ..approver
    };
    assert_eq!(
        may_act_on(&colleague, OperationAction::Approve, Some(&own)),
        Ok(())
    );
}

#[test]
fn another_tenants_operation_is_not_found_never_forbidden() {
    let tenants = tenants();
    let theirs = OperationFacts {
        tenant_id: THEIRS,
        submitted_by: Some(SOMEONE_ELSE),
    };
    for (role, what) in [
        (Role::Approver, OperationAction::Approve),
        (Role::Approver, OperationAction::Reject),
        (Role::Operator, OperationAction::Resolve),
        (Role::Operator, OperationAction::Dispute),
        (Role::Agent, OperationAction::Read),
    ] {
        let who = actor(role, &tenants);
        let denial = may_act_on(&who, what, Some(&theirs)).unwrap_err();
        assert_eq!(
            denial,
            may_act_on(&who, what, None).unwrap_err(),
            "{role} {what:?}"
        );
        assert!(denial.is_not_found());
        assert_eq!(denial.code(), "not_found");
    }
    // A principal with no tenant at all finds nothing.
    let nobody = actor(Role::Approver, &[]);
    let mine = OperationFacts {
        tenant_id: MINE,
        submitted_by: None,
    };
    assert_eq!(
        may_act_on(&nobody, OperationAction::Approve, Some(&mine)),
        Err(Denial::NotFound)
    );
}

#[test]
fn only_agents_submit_and_only_for_their_tenants() {
    let tenants = tenants();
    for role in Role::ALL {
        let who = actor(role, &tenants);
        let (mine, theirs) = (may_submit(&who, MINE), may_submit(&who, THEIRS));
        if role == Role::Agent {
            assert_eq!((mine, theirs), (Ok(()), Err(Denial::TenantNotGranted)));
        } else {
            assert_eq!(
                (mine, theirs),
                (Err(Denial::RoleNotAllowed), Err(Denial::RoleNotAllowed)),
                "{role}"
            );
        }
    }
}

#[test]
fn only_admins_manage_access_and_every_role_lists() {
    let tenants = tenants();
    for role in Role::ALL {
        let who = actor(role, &tenants);
        assert_eq!(
            may(&who, ApiAction::ManageAccess).is_ok(),
            role == Role::Admin,
            "{role}"
        );
        assert_eq!(may(&who, ApiAction::ReadOperations), Ok(()), "{role}");
    }
}

#[test]
fn codes_are_bounded_and_sign_in_methods_round_trip() {
    let codes: Vec<&str> = [
        Denial::RoleNotAllowed,
        Denial::TenantNotGranted,
        Denial::NotFound,
        Denial::SubmitterCannotApprove,
        Denial::NotRecordedApprover,
    ]
    .into_iter()
    .map(Denial::code)
    .collect();
    assert_eq!(
        codes,
        [
            "role_not_allowed",
            "tenant_not_granted",
            "not_found",
            "submitter_cannot_approve",
            "not_recorded_approver"
        ]
    );
    for m in SignIn::ALL {
        assert_eq!(SignIn::parse(m.as_str()), Some(m));
    }
    assert_eq!(SignIn::parse("password"), None);
}

#[test]
fn an_id_names_the_one_operation_of_the_callers_tenants_that_holds_it() {
    let granted = tenants();
    let who = actor(Role::Approver, &granted);
    let s = |v: &[&str]| v.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>();
    // Another tenant's operation with the id counts for nothing: a free id's answer.
    assert_eq!(locate(&who, None, &s(&[THEIRS])), Err(Denial::NotFound));
    assert_eq!(locate(&who, None, &s(&[])), Err(Denial::NotFound));
    assert_eq!(locate(&who, None, &s(&[THEIRS, MINE])), Ok(MINE));
    // Two of the caller's tenants hold it: the tenant must be named.
    let both = s(&[MINE, "org_483"]);
    assert_eq!(locate(&who, None, &both), Err(Denial::Ambiguous));
    assert_eq!(locate(&who, Some("org_483"), &both), Ok("org_483"));
    assert_eq!(locate(&who, Some(MINE), &both), Ok(MINE));
    // Naming a tenant not granted, or one that does not hold the id, finds nothing.
    assert_eq!(
        locate(&who, Some(THEIRS), &s(&[THEIRS])),
        Err(Denial::NotFound)
    );
    assert_eq!(
        locate(&who, Some("org_483"), &s(&[MINE])),
        Err(Denial::NotFound)
    );
    assert_eq!(Denial::Ambiguous.code(), "operation_id_ambiguous");
}
