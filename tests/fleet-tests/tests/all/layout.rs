//! The workspace's shape: a worker is a process with its own role, and what two doors
//! share (the intake, authorization, the store) lives in a shared crate both depend on,
//! never in one worker that another links.

use std::path::Path;

/// The crates under `workers/`, by package name, with the names of their dependencies.
fn workers() -> Vec<(String, Vec<String>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workers");
    let mut crates = Vec::new();
    for entry in std::fs::read_dir(&root).expect("workers/") {
        let manifest = entry.expect("an entry").path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let doc: toml::Table = text.parse().expect("a manifest");
        let name = doc["package"]["name"].as_str().expect("a name").to_owned();
        let deps = ["dependencies", "dev-dependencies", "build-dependencies"]
            .iter()
            .filter_map(|section| doc.get(*section).and_then(toml::Value::as_table))
            .flat_map(|table| table.keys().cloned())
            .collect();
        crates.push((name, deps));
    }
    crates
}

#[test]
fn no_worker_depends_on_another_worker() {
    let crates = workers();
    assert!(crates.len() >= 7, "workers found: {crates:?}");
    let names: Vec<&str> = crates.iter().map(|(n, _)| n.as_str()).collect();
    let mut arrows = Vec::new();
    for (name, deps) in &crates {
        for dep in deps {
            if names.contains(&dep.as_str()) {
                arrows.push(format!("{name} -> {dep}"));
            }
        }
    }
    assert!(
        arrows.is_empty(),
        "a worker links another (move what they share to a crate under shared/): {arrows:?}"
    );
}
