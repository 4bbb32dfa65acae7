#!/usr/bin/env bash
# Installs localstripe (a third-party double of Stripe's API, from PyPI, pinned) into a venv
# under target/ and prints the path of its `localstripe` command. Reinstalls only when the
# pinned version changes. The Stripe integration tests call it through their harness
# (tests/fleet-tests/src/localstripe.rs); .ci/run calls it before the tests so that a plain
# `cargo test` finds it installed. Concurrent callers wait on a lock.
set -euo pipefail
here="$(dirname "$0")"
venv=$(bash "$here/pip-venv.sh" "${LOCALSTRIPE_VENV:-target/localstripe-venv}" "localstripe==1.15.10")
echo "$venv/bin/localstripe"
