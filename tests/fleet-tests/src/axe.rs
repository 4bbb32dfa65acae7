//! axe-core in the real Chromium of the console tests: installed into target/axe by
//! `tests/fleet-tests/axe.sh` (npm, pinned), injected into the page as it is, and run there.
//! Its violations are what a screen reader or a keyboard user would trip on.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

use crate::browser::Browser;

/// axe.min.js, installed once per test process (the script's lock keeps concurrent test
/// processes from installing twice).
fn source() -> &'static str {
    static SOURCE: OnceLock<String> = OnceLock::new();
    SOURCE.get_or_init(|| {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("axe.sh");
        let out = Command::new("bash")
            .arg(&script)
            .stderr(Stdio::inherit())
            .output()
            .unwrap_or_else(|e| panic!("AXE NOT INSTALLED: running {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "AXE NOT INSTALLED: {} failed ({}); it needs npm and its registry \
             (run `bash tests/fleet-tests/axe.sh` to see why)",
            script.display(),
            out.status
        );
        let path = String::from_utf8(out.stdout).expect("a path");
        std::fs::read_to_string(path.trim()).expect("read axe.min.js")
    })
}

impl Browser {
    /// axe-core's violations on the page as it is now (every rule axe runs by default,
    /// WCAG 2.x A and AA among them): `[{"id", "impact", "help", "nodes": [{"target"}]}]`.
    pub async fn axe_violations(&self) -> Vec<Value> {
        self.client
            .execute(source(), vec![])
            .await
            .expect("inject axe-core");
        let found = self
            .client
            .execute_async(
                "const done = arguments[arguments.length - 1];
                 axe.run(document, {resultTypes: ['violations']})
                    .then(r => done(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                        nodes: v.nodes.map(n => ({target: n.target, html: n.html.slice(0, 200)}))}))))
                    .catch(e => done([{id: 'axe-error', help: String(e), nodes: []}]));",
                vec![],
            )
            .await
            .expect("run axe-core");
        found.as_array().cloned().unwrap_or_default()
    }
}
