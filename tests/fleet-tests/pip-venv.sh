#!/usr/bin/env bash
# Installs one pinned PyPI package into a venv of its own under target/ and prints the
# venv's absolute path; reinstalls only when the pin changes. Concurrent callers wait on
# a lock. Used by localstripe.sh and aiosmtpd.sh.
#
# usage: pip-venv.sh VENV_DIR PACKAGE==VERSION
set -euo pipefail
cd "$(dirname "$0")/../.."

VENV=$1
PIN=$2
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9
if [[ "$(cat "$VENV/.installed" 2>/dev/null || true)" != "$PIN" ]]; then
  rm -rf "$VENV"
  python3 -m venv "$VENV" >&2
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "$PIN" >&2
  echo "$PIN" >"$VENV/.installed"
fi
cd "$VENV" && pwd
