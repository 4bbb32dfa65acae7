//! `fleetctl evidence OP`: an operation's signed evidence bundle through the API, printed
//! as the API sent it (RFC 8785 canonical JSON, one line) for `> op.evidence.json`; and
//! `fleetctl verify FILE`: the bundle checked on this machine alone (no database, no
//! network), every check said in words with the part it is about, then what the bundle
//! proves and what it cannot. A check that fails names its part and the command exits 1.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use fleet_core::evidence::{verify, Report, Trust};
use fleet_core::PublicKey;
use serde_json::Value;

use crate::api_client::ApiClient;

/// The bundle of `op`, printed as sent.
pub async fn fetch(client: &ApiClient, op: &str) -> anyhow::Result<()> {
    fleet_core::OperationId::parse(op).map_err(anyhow::Error::msg)?;
    let answer = client
        .get_path(
            &format!("/v1/operations/{op}/evidence"),
            &format!("reading the evidence of {op}"),
        )
        .await?;
    println!("{}", answer.body.trim_end());
    Ok(())
}

/// Whom the deployment's signature is checked against, from the command line.
pub fn trust_of(key_id: Option<&str>, public_key: Option<&Path>) -> anyhow::Result<Option<Trust>> {
    match (key_id, public_key) {
        (Some(id), _) => {
            anyhow::ensure!(
                fleet_core::KeyId::parse(id).is_some(),
                "--key-id {id} is not a key id (ed25519: and 32 hex digits)"
            );
            Ok(Some(Trust::PinnedId(id.to_owned())))
        }
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the public key {}", path.display()))?;
            let key = PublicKey::parse(&text)
                .with_context(|| format!("{} holds no Ed25519 public key", path.display()))?;
            Ok(Some(Trust::Keys(vec![key])))
        }
        (None, None) => Ok(None),
    }
}

/// Checks the bundle in `file`; prints the report; exit 0 when every check held, else 1.
pub fn run_verify(file: &Path, trust: Option<Trust>) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("reading the evidence bundle {}", file.display()))?;
    let doc: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?;
    // Without a key named, the bundle's own key is taken, and said to be unchecked.
    let pinned = trust.is_some();
    let trust = trust.unwrap_or_else(|| {
        Trust::PinnedId(
            doc["signature"]["key_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )
    });
    let report = verify(&doc, &trust);
    for line in lines(&doc, &report, pinned) {
        println!("{line}");
    }
    if report.ok() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "error: the evidence bundle {} does NOT verify: {}",
        file.display(),
        failed_parts(&report).join(", ")
    );
    Ok(ExitCode::from(crate::exit::Exit::Error.status()))
}

/// The parts whose checks failed, each once, in the report's order.
pub fn failed_parts(report: &Report) -> Vec<String> {
    let mut parts: Vec<String> = Vec::new();
    for f in report.findings.iter().filter(|f| !f.ok) {
        if !parts.contains(&f.part) {
            parts.push(f.part.clone());
        }
    }
    parts
}

/// The report in words: the verdict, every check, what it proves, what it cannot.
pub fn lines(doc: &Value, report: &Report, pinned: bool) -> Vec<String> {
    let mut out = vec![format!(
        "{}: evidence bundle of {} (tenant {}), made {}",
        if report.ok() {
            "VERIFIED"
        } else {
            "NOT VERIFIED"
        },
        doc["operation_id"].as_str().unwrap_or("?"),
        doc["tenant_id"].as_str().unwrap_or("?"),
        doc["made_at"].as_str().unwrap_or("?"),
    )];
    out.push("checks:".to_owned());
    let width = report
        .findings
        .iter()
        .map(|f| f.part.chars().count())
        .max()
        .unwrap_or(0);
    for f in &report.findings {
        out.push(format!(
            "  {}  {:width$}  {}",
            if f.ok { "ok  " } else { "FAIL" },
            f.part,
            f.words
        ));
    }
    if report.ok() {
        out.push("it proves:".to_owned());
        out.extend(report.proves.iter().map(|p| format!("  - {p}")));
    }
    out.push("it cannot prove:".to_owned());
    out.extend(report.cannot.iter().map(|c| format!("  - {c}")));
    if !pinned {
        out.push(format!(
            "  - That {} is the deployment's evidence key: no key was named, so the bundle's own was taken. Compare it with GET /v1/evidence-keys, or name it with --key-id or --public-key.",
            doc["signature"]["key_id"].as_str().unwrap_or("?")
        ));
    }
    out
}
