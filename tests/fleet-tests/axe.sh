#!/usr/bin/env bash
# Installs axe-core (npm, pinned by tests/fleet-tests/axe/package-lock.json) into target/axe
# and prints the path of its axe.min.js, which the console's accessibility test injects into
# Chromium. Reinstalls only when the lock file changes. The test calls it through its
# harness (tests/fleet-tests/src/axe.rs); .ci/run calls it before the tests so that a
# plain `cargo test` finds it installed. Concurrent callers wait on a lock.
set -euo pipefail
cd "$(dirname "$0")/../.."

DIR=${AXE_DIR:-target/axe}
mkdir -p "$DIR"
exec 9>"$DIR.lock"
flock 9
LOCK=tests/fleet-tests/axe/package-lock.json
if ! cmp -s "$LOCK" "$DIR/package-lock.json" || [[ ! -f "$DIR/node_modules/axe-core/axe.min.js" ]]; then
  rm -rf "$DIR/node_modules"
  cp tests/fleet-tests/axe/package.json "$LOCK" "$DIR/"
  (cd "$DIR" && npm ci --ignore-scripts --no-audit --no-fund --silent) >&2
fi
echo "$(cd "$DIR" && pwd)/node_modules/axe-core/axe.min.js"
