//! The provider routes by name (`METHOD /path/template`), as fault rules and the request
//! log refer to them.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    CreatePayment,
    SearchPayments,
    GetPayment,
    CreateRefund,
    SearchRefunds,
    GetRefund,
    CreateDeal,
    SearchDeals,
    GetDeal,
    PatchDeal,
    TransitionOrder,
    GetOrder,
    CreateEnvelope,
    SearchEnvelopes,
    GetEnvelope,
    GetBeneficiary,
}

impl Route {
    pub const ALL: [Route; 16] = [
        Route::CreatePayment,
        Route::SearchPayments,
        Route::GetPayment,
        Route::CreateRefund,
        Route::SearchRefunds,
        Route::GetRefund,
        Route::CreateDeal,
        Route::SearchDeals,
        Route::GetDeal,
        Route::PatchDeal,
        Route::TransitionOrder,
        Route::GetOrder,
        Route::CreateEnvelope,
        Route::SearchEnvelopes,
        Route::GetEnvelope,
        Route::GetBeneficiary,
    ];

    /// The name used on the admin wire, e.g. `POST /v1/payments`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Route::CreatePayment => "POST /v1/payments",
            Route::SearchPayments => "GET /v1/payments",
            Route::GetPayment => "GET /v1/payments/{id}",
            Route::CreateRefund => "POST /v1/refunds",
            Route::SearchRefunds => "GET /v1/refunds",
            Route::GetRefund => "GET /v1/refunds/{id}",
            Route::CreateDeal => "POST /v1/deals",
            Route::SearchDeals => "GET /v1/deals",
            Route::GetDeal => "GET /v1/deals/{id}",
            Route::PatchDeal => "PATCH /v1/deals/{id}",
            Route::TransitionOrder => "POST /v1/orders/{id}/transitions",
            Route::GetOrder => "GET /v1/orders/{id}",
            Route::CreateEnvelope => "POST /v1/envelopes",
            Route::SearchEnvelopes => "GET /v1/envelopes",
            Route::GetEnvelope => "GET /v1/envelopes/{id}",
            Route::GetBeneficiary => "GET /v1/beneficiaries/{id}",
        }
    }

    pub fn parse(name: &str) -> Option<Route> {
        Route::ALL.into_iter().find(|route| route.as_str() == name)
    }

    /// Whether requests on this route execute an effect (and so have a commit point).
    pub const fn creates(self) -> bool {
        match self {
            Route::CreatePayment
            | Route::CreateRefund
            | Route::CreateDeal
            | Route::PatchDeal
            | Route::TransitionOrder
            | Route::CreateEnvelope => true,
            Route::SearchPayments
            | Route::GetPayment
            | Route::SearchRefunds
            | Route::GetRefund
            | Route::SearchDeals
            | Route::GetDeal
            | Route::GetOrder
            | Route::SearchEnvelopes
            | Route::GetEnvelope
            | Route::GetBeneficiary => false,
        }
    }

    pub fn method(self) -> &'static str {
        self.as_str()
            .split_once(' ')
            .map_or("", |(method, _)| method)
    }

    pub fn path(self) -> &'static str {
        self.as_str().split_once(' ').map_or("", |(_, path)| path)
    }

    /// The route a request to `path` with `method` is served by (`{id}` matches one
    /// path segment).
    pub fn matching(method: &str, path: &str) -> Option<Route> {
        Route::ALL.into_iter().find(|route| {
            route.method() == method && {
                let (mut template, mut asked) = (route.path().split('/'), path.split('/'));
                loop {
                    match (template.next(), asked.next()) {
                        (None, None) => break true,
                        (Some("{id}"), Some(segment)) if !segment.is_empty() => {}
                        (Some(t), Some(a)) if t == a => {}
                        _ => break false,
                    }
                }
            }
        })
    }

    /// The provider API the route belongs to, which has its own rate limit: the payments
    /// API (payments, refunds, beneficiaries), the CRM, orders, e-signatures.
    pub const fn provider(self) -> &'static str {
        match self {
            Route::CreatePayment
            | Route::SearchPayments
            | Route::GetPayment
            | Route::CreateRefund
            | Route::SearchRefunds
            | Route::GetRefund
            | Route::GetBeneficiary => "payments",
            Route::CreateDeal | Route::SearchDeals | Route::GetDeal | Route::PatchDeal => "crm",
            Route::TransitionOrder | Route::GetOrder => "orders",
            Route::CreateEnvelope | Route::SearchEnvelopes | Route::GetEnvelope => "esign",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_parses_back_from_its_name() {
        for route in Route::ALL {
            assert_eq!(Route::parse(route.as_str()), Some(route));
        }
        assert_eq!(Route::parse("POST /v1/charges"), None);
        assert_eq!(Route::PatchDeal.method(), "PATCH");
        assert_eq!(Route::PatchDeal.path(), "/v1/deals/{id}");
        assert_eq!(Route::CreateRefund.method(), "POST");
        assert_eq!(Route::CreateRefund.path(), "/v1/refunds");
    }

    #[test]
    fn requests_find_their_route() {
        for route in Route::ALL {
            let path = route.path().replace("{id}", "obj_1");
            assert_eq!(Route::matching(route.method(), &path), Some(route));
        }
        assert_eq!(Route::matching("GET", "/v1/payments/"), None);
        assert_eq!(Route::matching("GET", "/v1/payments/a/b"), None);
        assert_eq!(Route::matching("DELETE", "/v1/payments"), None);
        assert_eq!(Route::matching("GET", "/v1/charges"), None);
    }
}
