#!/usr/bin/env bash
# Runs the Python agent against a real local fleet and checks it learns `succeeded`.
#
# Needs PostgreSQL and RabbitMQ as in the README (bash .ci/services) and the binaries built
# (cargo build --workspace --bins; BIN_DIR picks another build). It makes a fresh database
# and broker namespace, starts the provider simulator, the four workers, fleet-api and
# fleet-relay as processes on free ports (examples/local-fleet.sh), creates an agent token
# and the agent's own broker user, runs agent.py in a venv with the Python client, and
# approves the operation with fleetctl once it is prepared, as a person would. Everything
# it started or created is removed at the end, also on failure (logs stay in $LOG_DIR).
#
#   bash examples/python-agent/run-against-local-stack.sh
#   AGENT_AMQP_URL=amqp://guest:guest@127.0.0.1:1/%2f bash examples/python-agent/run-against-local-stack.sh   # no broker for the agent
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=examples/python-agent
VENV=${PYTHON_AGENT_VENV:-target/python-agent-venv}
LOG_DIR=${LOG_DIR:-target/python-agent-logs}
source examples/local-fleet.sh

# The venv: created once, packages reinstalled only when the requirements change (the
# client is installed editable, so its code is always the tree's).
local_fleet_venv "$VENV" "$HERE/requirements.txt" clients/python/pyproject.toml -- \
  -r "$HERE/requirements.txt" -e clients/python

local_fleet_start pyagent
AGENT=agent-$RUN
local_fleet_agent "$AGENT"

# AGENT_AMQP_URL gives the agent another broker address: one nothing listens on makes it
# follow the operation by long-polling the API instead of through the events.
FLEET_API_URL=$API_URL FLEET_TOKEN=$AGENT_TOKEN AGENT_WAIT_S=${AGENT_WAIT_S:-90} \
  AMQP_URL=${AGENT_AMQP_URL:-$AGENT_BROKER_URL} AGENT_PRINCIPAL=$AGENT \
  "$VENV/bin/python" -u "$HERE/agent.py" >"$LOG_DIR/agent.out" 2>&1 &
AGENT_PID=$!
PIDS+=($AGENT_PID)
local_fleet_approve >"$LOG_DIR/approval.out" 2>&1 || { cat "$LOG_DIR/approval.out" >&2; exit 1; }

agent_status=0
wait "$AGENT_PID" || agent_status=$?
cat "$LOG_DIR/agent.out"
if [[ $agent_status -ne 0 ]] || ! grep -q '^outcome: succeeded' "$LOG_DIR/agent.out"; then
  echo "the agent did not report succeeded (exit $agent_status)" >&2
  exit 1
fi
echo "python agent: ok"
