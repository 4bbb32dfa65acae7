#!/usr/bin/env bash
# Installs localstripe (a third-party double of Stripe's API, from PyPI, pinned) into a venv
# under target/ and prints the path of its `localstripe` command. Reinstalls only when the
# pinned version changes. The Stripe integration tests call it through their harness
# (tests/fleet-tests/src/localstripe.rs); .ci/run calls it before the tests so that a plain
# `cargo test` finds it installed. Concurrent callers wait on a lock.
set -euo pipefail
cd "$(dirname "$0")/../.."

VERSION=1.15.10
VENV=${LOCALSTRIPE_VENV:-target/localstripe-venv}
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9
if [[ "$(cat "$VENV/.installed" 2>/dev/null || true)" != "localstripe==$VERSION" ]]; then
  rm -rf "$VENV"
  python3 -m venv "$VENV" >&2
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "localstripe==$VERSION" >&2
  echo "localstripe==$VERSION" >"$VENV/.installed"
fi
echo "$(cd "$VENV" && pwd)/bin/localstripe"
