//! fleet-api's log lines stay whole whatever a client sends: CR, LF, ESC and other control
//! characters in the path, the query, the headers and the body of requests (raw over TCP,
//! and percent-encoded), in both log formats. Every text line starts like a log line
//! (a timestamp), every JSON line parses.

use std::time::Duration;

use fleet_core::Role;
use fleet_tests::{free_addr, ready, TestFleet};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// Requests carrying control characters in every part, authenticated by `token`.
fn requests(token: &str) -> Vec<Vec<u8>> {
    let nasty =
        "\r\n2026-01-01T00:00:00.000000Z  INFO forged: line\u{1b}[2J\u{7}\u{0}\u{85}\u{2028}";
    let encoded = "%0D%0A2026-01-01T00:00:00Z%20%20INFO%20forged%1B%5B2J%07%00%C2%85%E2%80%A8";
    let body = format!(
        "{{\"schema\":\"intent.v1\",\"operation_id\":\"{}\"}}",
        nasty.escape_default()
    );
    let raw_body = format!("{{\"x\":\"{nasty}\"}}");
    let auth = format!("Authorization: Bearer {token}\r\n");
    let mut all = Vec::new();
    for path in [
        format!("/v1/operations/{encoded}"),
        format!("/console/operations/{encoded}"),
        format!("/v1/operations?status={encoded}&{encoded}=1"),
        format!("/v1/operations/op_01J?wait_for={encoded}&timeout_s={encoded}"),
        format!("/{encoded}"),
    ] {
        all.push(
            format!("GET {path} HTTP/1.1\r\nHost: a\r\n{auth}Connection: close\r\n\r\n")
                .into_bytes(),
        );
    }
    for b in [body.as_str(), raw_body.as_str()] {
        all.push(
            format!(
                "POST /v1/intents HTTP/1.1\r\nHost: a\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                b.len()
            )
            .into_bytes(),
        );
        all.push(
            format!(
                "POST /mcp HTTP/1.1\r\nHost: a\r\n{auth}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                b.len()
            )
            .into_bytes(),
        );
    }
    // Raw control characters in the request line and in header names and values, which
    // the parser refuses, and in a header value it accepts (a tab, obs-text).
    all.push(b"GET /a\x1b[2J\nINFO b HTTP/1.1\r\nHost: a\r\n\r\n".to_vec());
    all.push(
        format!("GET / HTTP/1.1\r\nHost: a\r\nX-A\u{1b}: v\r\nX-B: {nasty}\r\n\r\n").into_bytes(),
    );
    all.push(b"GET /v1/operations HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \t\x85\xe2\x80\xa8\r\nX-C: a\tb\xc2\x85\r\nConnection: close\r\n\r\n".to_vec());
    all
}

async fn send_all(addr: &str, requests: &[Vec<u8>]) {
    for request in requests {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let _ = stream.write_all(request).await;
        let mut answer = Vec::new();
        let _ = timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    }
}

fn starts_like_a_text_log_line(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() > 27 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[10] == b'T'
}

async fn lines_stay_whole(format: &str) {
    let fleet = TestFleet::start().await;
    let token = fleet.token("log-bot", Role::Agent, &["org_482"]).await;
    let (addr, admin) = (free_addr(), free_addr());
    let api = fleet.spawn_process(
        "fleet-api",
        &[
            ("API_ADDR", addr.as_str()),
            ("ADMIN_ADDR", admin.as_str()),
            ("LOG_FORMAT", format),
            ("RUST_LOG", "debug"),
        ],
    );
    ready(&fleet.http, &format!("http://{admin}"), "fleet-api").await;
    send_all(&addr, &requests(&token)).await;
    api.wait_for_log("answered").await;
    let log = api.log_text();
    assert!(log.lines().count() > 10, "the requests were logged: {log}");
    for line in log.lines() {
        match format {
            "json" => assert!(
                serde_json::from_str::<serde_json::Value>(line).is_ok(),
                "not a JSON line: {line:?}"
            ),
            _ => assert!(
                starts_like_a_text_log_line(line),
                "not a log line: {line:?}"
            ),
        }
        assert!(
            !line.contains(['\u{1b}', '\u{7}', '\u{0}', '\u{85}', '\u{2028}', '\r']),
            "a raw control character in {line:?}"
        );
    }
}

#[tokio::test]
async fn control_characters_in_any_part_of_a_request_never_break_a_text_log_line() {
    lines_stay_whole("text").await;
}

#[tokio::test]
async fn control_characters_in_any_part_of_a_request_never_break_a_json_log_line() {
    lines_stay_whole("json").await;
}
