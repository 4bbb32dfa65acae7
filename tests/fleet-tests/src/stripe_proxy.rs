//! A fault-injecting HTTP/1.1 proxy in front of a Stripe double (localstripe): it forwards
//! every request as it came, one request per connection, and records what the fleet sent
//! (method, path, `Idempotency-Key`, body). A fault armed for the creates
//! (`POST /v1/refunds`, `POST /v1/payment_intents`) applies to the next such request: its
//! answer dropped after the double committed it, a 502 before anything is forwarded, or
//! the answer held past the caller's timeout.
//!
//! localstripe cannot filter its list of PaymentIntents by customer (it answers 400 to
//! `customer=`), which Stripe documents
//! (<https://docs.stripe.com/api/payment_intents/list>); the proxy reads such a list in
//! its place: the whole list from localstripe, filtered by the customer.
//!
//! localstripe refunds more than a payment holds; [`StripeProxy::refuse_over_refunds`]
//! makes the proxy refuse such a refund in its place, as Stripe documents it (400,
//! `invalid_request_error`, code `amount_too_large`, or `charge_already_refunded` once
//! nothing is left), reading the payment and its refunds from localstripe.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// What the proxy does to the next create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forwarded and committed by the double; the connection is then closed without a
    /// byte of the answer.
    DropAnswer,
    /// A 502 answered at once; nothing forwarded.
    BadGatewayBeforeForwarding,
    /// Stripe's rate limit: a 429 (`Retry-After: 1`, code `rate_limit`) answered at once;
    /// nothing forwarded.
    RateLimitedBeforeForwarding,
    /// Forwarded and committed; the answer is sent only after this long.
    HoldAnswer(Duration),
}

/// One request the proxy received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub idempotency_key: Option<String>,
    pub body: String,
}

#[derive(Default)]
struct State {
    faults: VecDeque<Fault>,
    seen: Vec<Seen>,
    refuse_over_refunds: bool,
}

/// The running proxy; it stops when dropped.
pub struct StripeProxy {
    pub base_url: String,
    state: Arc<Mutex<State>>,
    task: JoinHandle<()>,
}

impl Drop for StripeProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The creates the fleet sends to Stripe.
const CREATES: [(&str, &str); 2] = [("POST", "/v1/refunds"), ("POST", "/v1/payment_intents")];

fn is_create(method: &str, path: &str) -> bool {
    CREATES.contains(&(method, path))
}

impl StripeProxy {
    /// A proxy to `upstream` (`http://host:port`).
    pub async fn start(upstream: &str) -> StripeProxy {
        let upstream = upstream
            .strip_prefix("http://")
            .expect("an http upstream")
            .to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let state = shared.clone();
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    let _ = serve(client, &upstream, &state).await;
                });
            }
        });
        StripeProxy {
            base_url,
            state,
            task,
        }
    }

    /// Arms `fault` for the next create (`POST /v1/refunds` or `POST /v1/payment_intents`).
    pub fn arm(&self, fault: Fault) {
        self.state.lock().unwrap().faults.push_back(fault);
    }

    /// From now on, a refund larger than what is left of its PaymentIntent is refused as
    /// Stripe refuses it, never forwarded.
    pub fn refuse_over_refunds(&self) {
        self.state.lock().unwrap().refuse_over_refunds = true;
    }

    /// Every request seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// The creates (`POST /v1/refunds`, `POST /v1/payment_intents`) seen so far.
    pub fn creates(&self) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| is_create(&s.method, &s.path))
            .collect()
    }
}

/// One request of `client`: read whole, recorded, then forwarded (or not) as the armed
/// fault says.
async fn serve(mut client: TcpStream, upstream: &str, state: &Mutex<State>) -> std::io::Result<()> {
    let Some((head, body)) = read_request(&mut client).await? else {
        return Ok(());
    };
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let method = first.next().unwrap_or_default().to_owned();
    let target = first.next().unwrap_or_default().to_owned();
    let path = target.split('?').next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let idempotency_key = headers
        .iter()
        .find(|(n, _)| n == "idempotency-key")
        .map(|(_, v)| v.clone());
    let (fault, refuse_over_refunds) = {
        let mut state = state.lock().unwrap();
        state.seen.push(Seen {
            method: method.clone(),
            path: path.clone(),
            idempotency_key,
            body: String::from_utf8_lossy(&body).into_owned(),
        });
        if is_create(&method, &path) {
            (state.faults.pop_front(), state.refuse_over_refunds)
        } else {
            (None, false)
        }
    };
    if method == "GET" && path == "/v1/payment_intents" {
        if let Some(list) = intents_of_customer(upstream, &headers, &target).await {
            client.write_all(&answer(200, &list)).await?;
            return client.shutdown().await;
        }
    }
    if refuse_over_refunds {
        if let Some(refusal) = over_refund(upstream, &headers, &body).await {
            client.write_all(&answer(400, &refusal)).await?;
            return client.shutdown().await;
        }
    }
    if fault == Some(Fault::BadGatewayBeforeForwarding) {
        let body = r#"{"error":{"type":"api_error","message":"proxy: bad gateway"}}"#;
        client.write_all(&answer(502, body)).await?;
        return client.shutdown().await;
    }
    if fault == Some(Fault::RateLimitedBeforeForwarding) {
        let body = r#"{"error":{"type":"invalid_request_error","code":"rate_limit","message":"Too many requests"}}"#;
        let mut limited = answer(429, body);
        // The wait Stripe asks for, in the head.
        let head_end = limited.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        limited.splice(
            head_end + 2..head_end + 2,
            b"retry-after: 1\r\n".iter().copied(),
        );
        client.write_all(&limited).await?;
        return client.shutdown().await;
    }
    // Forwarded with `connection: close`, so the double's answer ends at EOF.
    let mut forwarded = format!("{method} {target} HTTP/1.1\r\n");
    for (name, value) in &headers {
        if name != "connection" && name != "keep-alive" {
            forwarded.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    forwarded.push_str("connection: close\r\n\r\n");
    let mut up = TcpStream::connect(upstream).await?;
    up.write_all(forwarded.as_bytes()).await?;
    up.write_all(&body).await?;
    let mut answer = Vec::new();
    up.read_to_end(&mut answer).await?;
    match fault {
        Some(Fault::DropAnswer) => return Ok(()),
        Some(Fault::HoldAnswer(wait)) => tokio::time::sleep(wait).await,
        _ => {}
    }
    client.write_all(&closing(&answer)).await?;
    client.shutdown().await
}

/// The head and body of one request (`None` when the client closed first).
async fn read_request(client: &mut TcpStream) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length = head
        .split("\r\n")
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Ok(Some((head, body)))
}

/// The double's answer with `connection: close`, so the fleet's client never reuses a
/// connection the proxy closes.
fn closing(answer: &[u8]) -> Vec<u8> {
    let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") else {
        return answer.to_vec();
    };
    let head = String::from_utf8_lossy(&answer[..end]);
    let mut out = String::new();
    for line in head.split("\r\n") {
        let name = line.split(':').next().unwrap_or_default().trim();
        if !name.eq_ignore_ascii_case("connection") && !name.eq_ignore_ascii_case("keep-alive") {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("connection: close\r\n\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&answer[end + 4..]);
    bytes
}

/// A whole JSON answer that closes the connection.
fn answer(status: u16, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} Proxy\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Stripe's refusal of the refund `form` asks for, when it is more than what is left of
/// its PaymentIntent (as localstripe holds it); `None` when it fits (or cannot be read).
async fn over_refund(upstream: &str, headers: &[(String, String)], form: &[u8]) -> Option<String> {
    let field = |name: &str| {
        url::form_urlencoded::parse(form)
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let intent = field("payment_intent")?;
    let amount: i64 = field("amount")?.parse().ok()?;
    let upstream = Upstream::of(upstream, headers)?;
    let paid = upstream
        .get(&format!("/v1/payment_intents/{intent}"))
        .await?;
    let refunds = upstream
        .get(&format!("/v1/refunds?limit=100&payment_intent={intent}"))
        .await?;
    let refunded: i64 = refunds["data"]
        .as_array()?
        .iter()
        .filter_map(|r| r["amount"].as_i64())
        .sum();
    let left = paid["amount"].as_i64()? - refunded;
    let (code, message) = if left <= 0 {
        (
            "charge_already_refunded",
            format!("Charge for {intent} has already been refunded."),
        )
    } else if amount > left {
        (
            "amount_too_large",
            format!(
                "Refund amount ({amount}) is greater than unrefunded amount on charge ({left})"
            ),
        )
    } else {
        return None;
    };
    Some(
        serde_json::json!({"error": {"type": "invalid_request_error", "code": code,
                                     "param": "amount", "message": message}})
        .to_string(),
    )
}

/// `GET /v1/payment_intents?customer=…` read in localstripe's place: every PaymentIntent
/// localstripe holds (paged through), those of the customer kept, in one page. `None` for
/// a list that names no customer (forwarded as it came).
async fn intents_of_customer(
    upstream: &str,
    headers: &[(String, String)],
    target: &str,
) -> Option<String> {
    let query = target.split_once('?')?.1;
    let customer = url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "customer")
        .map(|(_, v)| v.into_owned())?;
    let upstream = Upstream::of(upstream, headers)?;
    let mut all = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut path = "/v1/payment_intents?limit=100".to_owned();
        if let Some(after) = &after {
            path.push_str(&format!("&starting_after={after}"));
        }
        let page = upstream.get(&path).await?;
        let data = page["data"].as_array()?.clone();
        after = data
            .last()
            .and_then(|o| o["id"].as_str())
            .map(str::to_owned);
        all.extend(data);
        if page["has_more"] != true || after.is_none() {
            break;
        }
    }
    all.retain(|pi| pi["customer"].as_str() == Some(customer.as_str()));
    Some(
        serde_json::json!({"object": "list", "url": "/v1/payment_intents", "has_more": false,
                           "data": all})
        .to_string(),
    )
}

/// localstripe behind the proxy, asked with the authorization of the request the proxy
/// answers in its place.
struct Upstream<'a> {
    addr: &'a str,
    authorization: String,
    http: reqwest::Client,
}

impl<'a> Upstream<'a> {
    /// `None` when the request carries no authorization.
    fn of(addr: &'a str, headers: &[(String, String)]) -> Option<Upstream<'a>> {
        let authorization = headers
            .iter()
            .find(|(n, _)| n == "authorization")
            .map(|(_, v)| v.clone())?;
        Some(Upstream {
            addr,
            authorization,
            http: reqwest::Client::new(),
        })
    }

    /// `GET path`'s JSON; `None` when it cannot be read.
    async fn get(&self, path: &str) -> Option<serde_json::Value> {
        let answer = self
            .http
            .get(format!("http://{}{path}", self.addr))
            .header("authorization", &self.authorization)
            .send()
            .await
            .ok()?;
        answer.json().await.ok()
    }
}
