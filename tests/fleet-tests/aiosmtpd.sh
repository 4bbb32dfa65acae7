#!/usr/bin/env bash
# Installs aiosmtpd (an SMTP server for asyncio, from PyPI, pinned) into a venv under
# target/ and prints the path of that venv's python, which runs the notification tests'
# mail sink (tests/fleet-tests/smtp_sink.py). The tests call it from their harness
# (tests/fleet-tests/tests/all/notifications.rs); .ci/run calls it before the tests so
# that a plain `cargo test` finds it installed.
set -euo pipefail
here="$(dirname "$0")"
venv=$(bash "$here/pip-venv.sh" "${AIOSMTPD_VENV:-target/aiosmtpd-venv}" "aiosmtpd==1.4.6")
echo "$venv/bin/python"
