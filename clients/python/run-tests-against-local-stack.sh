#!/usr/bin/env bash
# Runs the client's tests, the unit tests and the integration tests, against a real local
# fleet, after checking its types.
#
# Needs PostgreSQL and RabbitMQ as in the README (bash .ci/services) and the binaries built
# (cargo build --workspace --bins; BIN_DIR picks another build). It makes a venv in
# target/python-client-venv (once; reinstalled only when requirements.txt or pyproject.toml
# change; the client is installed editable, so its code is always the tree's), starts a
# fleet on a fresh database and broker namespace (examples/local-fleet.sh), gives the tests
# an agent with a token and its own broker user and an approver's token, and runs pytest.
# Everything it started or created is removed at the end, also on failure, the agent's
# broker user included (logs in target/python-client-logs).
#
#   bash clients/python/run-tests-against-local-stack.sh [pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=clients/python
VENV=${PYTHON_CLIENT_VENV:-target/python-client-venv}
LOG_DIR=${LOG_DIR:-target/python-client-logs}
source examples/local-fleet.sh

local_fleet_venv "$VENV" "$HERE/requirements.txt" "$HERE/pyproject.toml" -- \
  -r "$HERE/requirements.txt" -e "$HERE"

# The types first (mypy --strict, as pyproject.toml configures it): seconds, no fleet needed.
"$VENV/bin/python" -m mypy --config-file "$HERE/pyproject.toml" --cache-dir "$VENV/mypy-cache" "$HERE/src"

local_fleet_start pyclient
local_fleet_agent "client-$RUN"
local_fleet_approver_token

# What the integration tests read (tests/integration/conftest.py); without FLEET_API_URL
# they are skipped, so `pytest` alone runs the unit tests.
FLEET_API_URL=$API_URL FLEET_TOKEN=$AGENT_TOKEN FLEET_APPROVER_TOKEN=$APPROVER_TOKEN \
  FLEET_PRINCIPAL="client-$RUN" FLEET_AGENT_AMQP_URL=$AGENT_BROKER_URL \
  FLEET_ADMIN_AMQP_URL=$AMQP_URL FLEET_AMQP_NAMESPACE=$AMQP_NAMESPACE \
  FLEETCTL=$BIN_DIR/fleetctl \
  "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$HERE/tests" "$@"
echo "python client: ok"
