//! What the Stripe simulator holds (transfers, PaymentIntents, their charges and refunds,
//! the customers and payment methods a test put, saved answers by key, the requests of
//! the last second) and how each request is answered. Everything happens under one lock,
//! so a request executes whole before the next is looked at.
//!
//! Every object lives in one account: the connected account named by the request that
//! made it (`Stripe-Account`), else the platform's. A request sees, finds, lists and
//! refunds only its own account's objects, and its idempotency keys are its account's, as
//! Stripe keeps them (<https://docs.stripe.com/connect/authentication>).

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::{StripeFault, StripeSimConfig};

/// One object made, with the account it lives in, when it was made (for the search's
/// lag) and until when it stays out of lists (a fault).
pub(crate) struct Stored {
    pub object: Value,
    /// The connected account it lives in; `None`: the platform's own.
    pub account: Option<String>,
    created: Instant,
    unlisted_until: Option<Instant>,
}

impl Stored {
    pub(super) fn new(object: Value, account: Option<&str>, now: Instant) -> Stored {
        Stored {
            object,
            account: account.map(str::to_owned),
            created: now,
            unlisted_until: None,
        }
    }

    /// Whether it lives in `account` (`None`: the platform's).
    pub(super) fn in_account(&self, account: Option<&str>) -> bool {
        self.account.as_deref() == account
    }

    pub(super) fn listed(&self, now: Instant) -> bool {
        self.unlisted_until.is_none_or(|until| now >= until)
    }
}

/// A create as its handler reads it: the account the object is made in, the form's
/// parameters, and when the request came.
#[derive(Clone, Copy)]
pub(super) struct Create<'a> {
    pub account: Option<&'a str>,
    pub params: &'a [(String, String)],
    pub now: Instant,
}

/// A read as the routes under `GET /v1` take it: the path asked, the account it reads in,
/// the query's parameters, and when the request came.
#[derive(Clone, Copy)]
struct Read<'a> {
    path: &'a str,
    account: Option<&'a str>,
    query: &'a [(String, String)],
    now: Instant,
}

/// Keeps the object a create made among `held`, in the request's account, and answers it:
/// the create executed, so its answer is saved under the key.
pub(super) fn made(held: &mut Vec<Stored>, object: Value, create: Create) -> (Answer, bool) {
    held.push(Stored::new(object.clone(), create.account, create.now));
    (Answer::json(200, object), true)
}

/// One request received under `/v1`, as the simulator saw and answered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenRequest {
    pub method: String,
    /// The path, without the query.
    pub path: String,
    pub idempotency_key: Option<String>,
    /// The connected account it acted in (`Stripe-Account`); `None`: the platform's.
    pub account: Option<String>,
    /// The form body of a `POST`, or the query of a `GET`, decoded, in order.
    pub params: Vec<(String, String)>,
    /// The status answered; `None` when the connection was closed unanswered.
    pub status: Option<u16>,
    /// Answered with `Idempotent-Replayed: true`.
    pub replayed: bool,
    /// When it arrived.
    pub at: Instant,
}

impl SeenRequest {
    /// The value of the parameter `name`, when sent.
    pub fn param(&self, name: &str) -> Option<&str> {
        param(&self.params, name)
    }
}

/// An answer saved under an idempotency key: what was asked, and what was answered.
struct Saved {
    path: String,
    params: Vec<(String, String)>,
    status: u16,
    body: Value,
    at: Instant,
}

/// What a request gets.
#[derive(Debug)]
pub(crate) enum Answer {
    Json {
        status: u16,
        body: Value,
        replayed: bool,
    },
    /// The connection is closed without an answer.
    Drop,
}

impl Answer {
    pub(super) fn json(status: u16, body: Value) -> Answer {
        Answer::Json {
            status,
            body,
            replayed: false,
        }
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            Answer::Json { status, .. } => Some(*status),
            Answer::Drop => None,
        }
    }
}

/// Stripe's error answer: `{"error": {"type", "code", "message", "param"}}`.
pub(crate) fn error(status: u16, kind: &str, code: Option<&str>, message: &str) -> Answer {
    let mut error = json!({"type": kind, "message": message});
    if let Some(code) = code {
        error["code"] = json!(code);
    }
    Answer::json(status, json!({ "error": error }))
}

/// The answer above the rate: nothing executed, and Stripe says a retry may succeed
/// (`Stripe-Should-Retry: true`, added with the headers).
pub(crate) fn rate_limited() -> Answer {
    error(
        429,
        "invalid_request_error",
        Some("rate_limit"),
        "Too many requests hit the API too quickly.",
    )
}

/// A required parameter the request does not give.
fn missing(param: &str) -> Answer {
    let message = format!("Missing required param: {param}.");
    invalid("parameter_missing", param, &message)
}

fn invalid_amount() -> Answer {
    invalid(
        "parameter_invalid_integer",
        "amount",
        "Invalid positive integer",
    )
}

/// `amount`, a positive integer; `None` when the request gives none.
fn positive_amount(params: &[(String, String)]) -> Option<Result<i64, Answer>> {
    param(params, "amount").map(|amount| match amount.parse::<i64>() {
        Ok(amount) if amount > 0 => Ok(amount),
        _ => Err(invalid_amount()),
    })
}

pub(super) fn invalid(code: &str, param: &str, message: &str) -> Answer {
    let mut answer = error(400, "invalid_request_error", Some(code), message);
    if let Answer::Json { body, .. } = &mut answer {
        body["error"]["param"] = json!(param);
    }
    answer
}

pub(super) fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

pub(crate) struct StripeState {
    config: StripeSimConfig,
    pub transfers: Vec<Stored>,
    pub payment_intents: Vec<Stored>,
    /// The charges of the PaymentIntents confirmed (their `latest_charge`).
    pub charges: Vec<Stored>,
    pub refunds: Vec<Stored>,
    /// The customers and payment methods, as the test put them in their accounts.
    pub customers: Vec<Stored>,
    pub payment_methods: Vec<Stored>,
    /// The connected accounts, by id, as the test put them.
    pub accounts: HashMap<String, Value>,
    /// By account (`None`: the platform's) and key: Stripe keeps keys per account.
    keys: HashMap<(Option<String>, String), Saved>,
    pub faults: VecDeque<StripeFault>,
    pub log: Vec<SeenRequest>,
    /// When each request of the last second arrived (the rate limit's window).
    window: VecDeque<Instant>,
    /// What the transfers made took from the balance.
    transferred: i64,
}

/// Stripe's largest page, and its default.
const MAX_LIMIT: usize = 100;
const DEFAULT_LIMIT: usize = 10;

impl StripeState {
    pub fn new(config: StripeSimConfig) -> StripeState {
        StripeState {
            config,
            transfers: Vec::new(),
            payment_intents: Vec::new(),
            charges: Vec::new(),
            refunds: Vec::new(),
            customers: Vec::new(),
            payment_methods: Vec::new(),
            accounts: HashMap::new(),
            keys: HashMap::new(),
            faults: VecDeque::new(),
            log: Vec::new(),
            window: VecDeque::new(),
            transferred: 0,
        }
    }

    pub fn api_key(&self) -> &str {
        &self.config.api_key
    }

    /// Whether one more request fits the rate limit now (it is then counted).
    pub fn admit(&mut self, now: Instant) -> bool {
        let Some(limit) = self.config.rate_limit_per_s else {
            return true;
        };
        while self
            .window
            .front()
            .is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(1))
        {
            self.window.pop_front();
        }
        if self.window.len() >= limit as usize {
            return false;
        }
        self.window.push_back(now);
        true
    }

    /// A `POST` to `path` in `account`: the armed fault first, then the key, then the
    /// create.
    pub fn post(
        &mut self,
        path: &str,
        account: Option<&str>,
        key: Option<&str>,
        params: &[(String, String)],
        now: Instant,
    ) -> Answer {
        let fault = self.faults.pop_front();
        match fault {
            Some(StripeFault::ServerErrorBeforeExecuting) => {
                let said = "An unknown error occurred (simulated).";
                return error(500, "api_error", None, said);
            }
            Some(StripeFault::RateLimited) => return rate_limited(),
            _ => {}
        }
        let retention = self.config.key_retention;
        self.keys
            .retain(|_, saved| now.duration_since(saved.at) < retention);
        let mut sorted = params.to_vec();
        sorted.sort();
        let scoped = key.map(|k| (account.map(str::to_owned), k.to_owned()));
        if let Some(saved) = scoped.as_ref().and_then(|k| self.keys.get(k)) {
            if saved.path == path && saved.params == sorted {
                return Answer::Json {
                    status: saved.status,
                    body: saved.body.clone(),
                    replayed: true,
                };
            }
            return error(
                400,
                "idempotency_error",
                None,
                "Keys for idempotent requests can only be used with the same parameters \
                 they were first used with.",
            );
        }
        let create = Create {
            account,
            params,
            now,
        };
        let (answer, executed) = match path {
            "/v1/transfers" => self.create_transfer(create),
            "/v1/payment_intents" => self.create_payment_intent(create),
            "/v1/refunds" => self.create_refund(create),
            _ => (unrecognized("POST", path), false),
        };
        if !executed {
            return answer;
        }
        if let (Some(key), Answer::Json { status, body, .. }) = (scoped, &answer) {
            self.keys.insert(
                key,
                Saved {
                    path: path.to_owned(),
                    params: sorted,
                    status: *status,
                    body: body.clone(),
                    at: now,
                },
            );
        }
        match fault {
            Some(StripeFault::DropAnswer) => Answer::Drop,
            Some(StripeFault::DropAnswerUnlisted(unlisted)) => {
                let made = match path {
                    "/v1/transfers" => self.transfers.last_mut(),
                    "/v1/refunds" => self.refunds.last_mut(),
                    _ => self.payment_intents.last_mut(),
                };
                if let Some(made) = made {
                    made.unlisted_until = Some(now + unlisted);
                }
                Answer::Drop
            }
            _ => answer,
        }
    }

    /// `POST /v1/transfers`; `true` when it executed (its answer is then saved).
    fn create_transfer(&mut self, create: Create) -> (Answer, bool) {
        let Create { params, .. } = create;
        let amount = match positive_amount(params) {
            Some(Ok(amount)) => amount,
            Some(Err(refused)) => return (refused, false),
            None => return (missing("amount"), false),
        };
        let currency = match param(params, "currency") {
            Some(c) if c.len() == 3 && c.bytes().all(|b| b.is_ascii_lowercase()) => c,
            Some(_) => {
                return (
                    invalid("parameter_invalid_string", "currency", "Invalid currency"),
                    false,
                )
            }
            None => return (missing("currency"), false),
        };
        let destination = match param(params, "destination") {
            Some(d) if d.len() > 5 && d.starts_with("acct_") => d,
            Some(d) => {
                return (
                    invalid(
                        "resource_missing",
                        "destination",
                        &format!("No such destination: '{d}'"),
                    ),
                    false,
                )
            }
            None => return (missing("destination"), false),
        };
        // Executed from here on: a refusal is the request's result, saved under its key.
        if let Some(balance) = self.config.balance_minor {
            if self.transferred + amount > balance {
                let refused = error(
                    400,
                    "invalid_request_error",
                    Some("balance_insufficient"),
                    "You have insufficient available funds in your Stripe account.",
                );
                return (refused, true);
            }
        }
        self.transferred += amount;
        let id = format!("tr_{}", ulid::Ulid::new());
        let object = json!({
            "id": id,
            "object": "transfer",
            "amount": amount,
            "amount_reversed": 0,
            "balance_transaction": format!("txn_{}", ulid::Ulid::new()),
            "created": chrono::Utc::now().timestamp(),
            "currency": currency,
            "description": param(params, "description"),
            "destination": destination,
            "destination_payment": format!("py_{}", ulid::Ulid::new()),
            "livemode": false,
            "metadata": metadata(params),
            "reversals": {"object": "list", "data": [], "has_more": false, "total_count": 0,
                          "url": format!("/v1/transfers/{id}/reversals")},
            "reversed": false,
            "source_transaction": null,
            "source_type": "card",
            "transfer_group": param(params, "transfer_group"),
        });
        made(&mut self.transfers, object, create)
    }

    /// `POST /v1/payment_intents`: made `succeeded` when `confirm=true`, with a charge of
    /// it as its `latest_charge`, else waiting for a payment method (the simulator charges
    /// nothing). A customer or payment method the simulator holds in another account than
    /// the request's is not found there (`resource_missing`), as at Stripe; one it holds
    /// nowhere is taken as named (tests that read neither need not put them).
    fn create_payment_intent(&mut self, create: Create) -> (Answer, bool) {
        let Create {
            account,
            params,
            now,
        } = create;
        // A PaymentIntent with no amount is refused as one with an invalid amount.
        let amount = match positive_amount(params).unwrap_or_else(|| Err(invalid_amount())) {
            Ok(amount) => amount,
            Err(refused) => return (refused, false),
        };
        let Some(currency) = param(params, "currency") else {
            return (missing("currency"), false);
        };
        for (name, held) in [
            ("customer", &self.customers),
            ("payment_method", &self.payment_methods),
        ] {
            if let Some(missing) = elsewhere(held, param(params, name), account) {
                let said = format!("No such {name}: '{missing}'");
                return (invalid("resource_missing", name, &said), false);
            }
        }
        let status = if param(params, "confirm") == Some("true") {
            "succeeded"
        } else {
            "requires_payment_method"
        };
        let id = format!("pi_{}", ulid::Ulid::new());
        let latest_charge = (status == "succeeded")
            .then(|| self.charge_of(&id, account, amount, currency, params, now));
        let object = json!({
            "id": id,
            "object": "payment_intent",
            "amount": amount,
            "amount_received": if status == "succeeded" { amount } else { 0 },
            "created": chrono::Utc::now().timestamp(),
            "currency": currency,
            "customer": param(params, "customer"),
            "latest_charge": latest_charge,
            "livemode": false,
            "metadata": metadata(params),
            "payment_method": param(params, "payment_method"),
            "status": status,
        });
        made(&mut self.payment_intents, object, create)
    }

    /// A `GET` under `/v1`, in `account`.
    pub fn get(
        &self,
        path: &str,
        account: Option<&str>,
        query: &[(String, String)],
        now: Instant,
    ) -> Answer {
        let read = Read {
            path,
            account,
            query,
            now,
        };
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let listed = |stored: &[Stored], fields: &[&str]| list_where(read, stored, fields);
        match segments.as_slice() {
            ["v1", "transfers"] => listed(&self.transfers, &["transfer_group"]),
            ["v1", "transfers", id] => by_id(&self.transfers, account, id, "transfer"),
            ["v1", "accounts", id] => match self.accounts.get(*id) {
                Some(account) => Answer::json(200, account.clone()),
                None => error(
                    404,
                    "invalid_request_error",
                    Some("resource_missing"),
                    &format!("No such account: '{id}'"),
                ),
            },
            ["v1", "payment_intents", "search"] => self.search(read),
            ["v1", "payment_intents"] => listed(&self.payment_intents, &["customer"]),
            ["v1", "payment_intents", id] => {
                let found = by_id(&self.payment_intents, account, id, "payment_intent");
                self.expanded(found, account, query)
            }
            ["v1", "charges", id] => {
                let found = by_id(&self.charges, account, id, "charge");
                self.expanded(found, account, query)
            }
            ["v1", "refunds"] => listed(&self.refunds, &["payment_intent", "charge"]),
            ["v1", "refunds", id] => by_id(&self.refunds, account, id, "refund"),
            ["v1", "customers", id] => by_id(&self.customers, account, id, "customer"),
            ["v1", "payment_methods", id] => {
                by_id(&self.payment_methods, account, id, "payment_method")
            }
            _ => unrecognized("GET", path),
        }
    }

    /// `GET /v1/payment_intents/search`: only `metadata['k']:'v'`, the PaymentIntents made
    /// at least the search lag ago, newest first, paged by an offset token.
    fn search(&self, read: Read) -> Answer {
        let query = read.query;
        let Some((key, value)) = param(query, "query").and_then(metadata_clause) else {
            return invalid(
                "parameter_invalid_string",
                "query",
                "The simulator searches by one clause: metadata['key']:'value'.",
            );
        };
        let Some(limit) = limit(query) else {
            return invalid("parameter_invalid_integer", "limit", "Invalid limit");
        };
        let offset = match param(query, "page") {
            None => 0,
            Some(page) => match page.strip_prefix("page_").and_then(|o| o.parse().ok()) {
                Some(offset) => offset,
                None => return invalid("parameter_invalid_string", "page", "Invalid page"),
            },
        };
        let lag = self.config.search_lag;
        let found: Vec<&Value> = self
            .payment_intents
            .iter()
            .rev()
            .filter(|p| p.in_account(read.account) && read.now.duration_since(p.created) >= lag)
            .map(|p| &p.object)
            .filter(|o| o["metadata"][&key] == value.as_str())
            .collect();
        let data: Vec<&Value> = found.iter().skip(offset).take(limit).copied().collect();
        let has_more = offset + data.len() < found.len();
        Answer::json(
            200,
            json!({
                "object": "search_result",
                "url": read.path,
                "data": data,
                "has_more": has_more,
                "next_page": has_more.then(|| format!("page_{}", offset + data.len())),
            }),
        )
    }
}

/// `metadata[…]` fields of a form, as the object's metadata.
pub(super) fn metadata(params: &[(String, String)]) -> Value {
    let mut metadata = Map::new();
    for (name, value) in params {
        if let Some(key) = name
            .strip_prefix("metadata[")
            .and_then(|k| k.strip_suffix(']'))
        {
            metadata.insert(key.to_owned(), json!(value));
        }
    }
    Value::Object(metadata)
}

/// `metadata['key']:'value'` (with `\'` and `\\` escapes) → the key and the value.
fn metadata_clause(query: &str) -> Option<(String, String)> {
    let rest = query.trim().strip_prefix("metadata['")?;
    let (key, rest) = rest.split_once("']:'")?;
    let quoted = rest.strip_suffix('\'')?;
    let mut value = String::new();
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => value.push(chars.next()?),
            '\'' => return None,
            c => value.push(c),
        }
    }
    Some((key.to_owned(), value))
}

fn limit(query: &[(String, String)]) -> Option<usize> {
    match param(query, "limit") {
        None => Some(DEFAULT_LIMIT),
        Some(l) => l.parse().ok().filter(|l| (1..=MAX_LIMIT).contains(l)),
    }
}

/// One page of `objects` (newest first) after `starting_after`, as Stripe lists.
pub(super) fn list<'a>(
    path: &str,
    objects: impl Iterator<Item = &'a Value>,
    query: &[(String, String)],
) -> Answer {
    let Some(limit) = limit(query) else {
        return invalid("parameter_invalid_integer", "limit", "Invalid limit");
    };
    let mut objects = objects.peekable();
    if let Some(after) = param(query, "starting_after") {
        let mut seen = false;
        for object in objects.by_ref() {
            if object["id"] == after {
                seen = true;
                break;
            }
        }
        if !seen {
            return invalid(
                "resource_missing",
                "starting_after",
                &format!("No such object: '{after}'"),
            );
        }
    }
    let data: Vec<&Value> = objects.by_ref().take(limit).collect();
    let has_more = objects.peek().is_some();
    Answer::json(
        200,
        json!({"object": "list", "url": path, "data": data, "has_more": has_more}),
    )
}

/// A list `GET` of `stored`: the objects of `account` listed by `now`, newest first, each
/// of `fields` the query gives narrowing it to the objects with that value.
fn list_where(read: Read, stored: &[Stored], fields: &[&str]) -> Answer {
    let query = read.query;
    let wanted = |o: &Stored| {
        fields
            .iter()
            .all(|field| param(query, field).is_none_or(|v| o.object[*field] == v))
    };
    let listed = stored
        .iter()
        .rev()
        .filter(|o| o.in_account(read.account) && o.listed(read.now))
        .filter(|o| wanted(o));
    list(read.path, listed.map(|o| &o.object), query)
}

/// The object `id` of `account`; another account's is not there (404), as at Stripe.
pub(super) fn by_id(objects: &[Stored], account: Option<&str>, id: &str, kind: &str) -> Answer {
    match objects
        .iter()
        .find(|o| o.in_account(account) && o.object["id"] == id)
    {
        Some(found) => Answer::json(200, found.object.clone()),
        None => error(
            404,
            "invalid_request_error",
            Some("resource_missing"),
            &format!("No such {kind}: '{id}'"),
        ),
    }
}

/// `id` when `held` has it in another account than `account` only: not there for the
/// request, as at Stripe.
fn elsewhere<'a>(held: &[Stored], id: Option<&'a str>, account: Option<&str>) -> Option<&'a str> {
    let id = id?;
    let named = |o: &&Stored| o.object["id"] == id;
    let mine = held.iter().filter(named).any(|o| o.in_account(account));
    let others = held.iter().filter(named).any(|o| !o.in_account(account));
    (others && !mine).then_some(id)
}

pub(crate) fn unrecognized(method: &str, path: &str) -> Answer {
    error(
        404,
        "invalid_request_error",
        None,
        &format!("Unrecognized request URL ({method}: {path})."),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metadata_clause_reads_with_its_escapes() {
        assert_eq!(
            metadata_clause("metadata['fleet_operation']:'op_1'"),
            Some(("fleet_operation".into(), "op_1".into()))
        );
        assert_eq!(
            metadata_clause("metadata['k']:'a\\'b'"),
            Some(("k".into(), "a'b".into()))
        );
        assert_eq!(metadata_clause("status:'succeeded'"), None);
        assert_eq!(metadata_clause("metadata['k']:'a'b'"), None);
    }
}
