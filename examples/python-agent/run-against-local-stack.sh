#!/usr/bin/env bash
# Runs the Python agent against a real local fleet and checks it learns `succeeded`.
#
# Needs PostgreSQL and RabbitMQ as in the README (bash .ci/services) and the binaries built
# (cargo build --workspace --bins; BIN_DIR picks another build). It makes a fresh database
# and broker namespace, starts the provider simulator, the four workers, fleet-api and
# fleet-relay as processes on free ports, creates an agent token, runs agent.py in a venv,
# and approves the operation with fleetctl once it is prepared, as a person would. Everything
# it started or created is removed at the end, also on failure (logs stay in $LOG_DIR).
#
#   bash examples/python-agent/run-against-local-stack.sh
#   AGENT_AMQP_URL=amqp://guest:guest@127.0.0.1:1/%2f bash examples/python-agent/run-against-local-stack.sh   # no broker for the agent
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=examples/python-agent

BIN_DIR=${BIN_DIR:-target/debug}
VENV=${PYTHON_AGENT_VENV:-target/python-agent-venv}
LOG_DIR=${LOG_DIR:-target/python-agent-logs}
PG=${PG_BASE_URL:-postgres://postgres@127.0.0.1:5432}
export AMQP_URL=${AMQP_URL:-amqp://guest:guest@127.0.0.1:5672/%2f}
MANAGEMENT_URL=${RABBITMQ_MANAGEMENT_URL:-http://127.0.0.1:15672}
MANAGEMENT_AUTH=${RABBITMQ_MANAGEMENT_AUTH:-guest:guest}

RUN=pyagent_$(date +%s)_$$
AGENT=agent-$RUN
export DATABASE_URL="$PG/fleet_$RUN" AMQP_NAMESPACE=$RUN LOG_FORMAT=json

# --- the venv: created once, packages reinstalled only when requirements.txt changes ---
if [[ ! -x $VENV/bin/python ]]; then
  python3 -m venv "$VENV"
fi
if ! cmp -s "$HERE/requirements.txt" "$VENV/installed-requirements.txt"; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$HERE/requirements.txt"
  cp "$HERE/requirements.txt" "$VENV/installed-requirements.txt"
fi

for bin in fleetctl fleet-provider-sim fleet-prepare fleet-execute fleet-reconcile \
           fleet-webhook-ingest fleet-api fleet-relay; do
  [[ -x $BIN_DIR/$bin ]] || { echo "$BIN_DIR/$bin is missing: cargo build --workspace --bins" >&2; exit 1; }
done

# --- teardown: our processes by pid, then the namespace and the database ---
PIDS=()
cleanup() {
  local status=$?
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  # Every queue and exchange of this run's namespace (and only those: the name is unique).
  for kind in queues exchanges; do
    curl -sf -u "$MANAGEMENT_AUTH" "$MANAGEMENT_URL/api/$kind/%2F?columns=name" |
      jq -r --arg p "$RUN." '.[].name | select(startswith($p))' |
      while read -r name; do
        curl -sf -u "$MANAGEMENT_AUTH" -X DELETE "$MANAGEMENT_URL/api/$kind/%2F/$name" >/dev/null || true
      done
  done
  # The agent's broker user (broker users belong to the broker, not to the namespace).
  curl -sf -u "$MANAGEMENT_AUTH" -X DELETE "$MANAGEMENT_URL/api/users/fleet-agent.$AGENT" >/dev/null || true
  psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS \"fleet_$RUN\" WITH (FORCE)" >/dev/null || true
  if [[ $status -ne 0 ]]; then
    echo "FAILED (logs in $LOG_DIR):" >&2
    tail -n 5 "$LOG_DIR"/*.log >&2 || true
  fi
  exit "$status"
}
trap cleanup EXIT

rm -rf "$LOG_DIR" && mkdir -p "$LOG_DIR"

start() { # binary, VAR=value...
  local bin=$1; shift
  env "$@" "$BIN_DIR/$bin" >"$LOG_DIR/$bin.log" 2>&1 &
  PIDS+=($!)
}

# The address a process logged for `message` (every port is chosen by the kernel).
logged_addr() { # log, message
  for _ in $(seq 1 300); do
    local addr
    addr=$(grep -F "$2" "$1" 2>/dev/null | grep -oE '127\.0\.0\.1:[0-9]+' | head -1 || true)
    if [[ -n $addr ]]; then echo "$addr"; return 0; fi
    sleep 0.1
  done
  echo "no '$2' in $1" >&2
  return 1
}

ready() { # binary
  local admin
  admin=$(logged_addr "$LOG_DIR/$1.log" "admin server listening")
  for _ in $(seq 1 300); do
    curl -sf "http://$admin/readyz" >/dev/null && return 0
    sleep 0.1
  done
  echo "$1 is not ready" >&2
  return 1
}

"$BIN_DIR/fleetctl" migrate >/dev/null

start fleet-provider-sim SIM_ADDR=127.0.0.1:0
SIM_URL=http://$(logged_addr "$LOG_DIR/fleet-provider-sim.log" "provider simulator listening")

# A development-only webhook secret (base64 of "dev-only-webhook-secret!"), as the demo's.
WORKER_ENV=(ADMIN_ADDR=127.0.0.1:0 PAYMENTS_URL="$SIM_URL" CRM_URL="$SIM_URL"
            WEBHOOK_SECRETS=whsec_ZGV2LW9ubHktd2ViaG9vay1zZWNyZXQh WEBHOOK_ADDR=127.0.0.1:0
            API_ADDR=127.0.0.1:0)
WORKERS=(fleet-prepare fleet-execute fleet-reconcile fleet-webhook-ingest fleet-api fleet-relay)
for bin in "${WORKERS[@]}"; do start "$bin" "${WORKER_ENV[@]}"; done
for bin in "${WORKERS[@]}"; do ready "$bin"; done
API_URL=http://$(logged_addr "$LOG_DIR/fleet-api.log" "api listening")

# The token is the first line printed (read whole: fleetctl must not write into a closed pipe).
TOKEN=$("$BIN_DIR/fleetctl" token create --principal "$AGENT" --role agent --tenant org_482 2>"$LOG_DIR/token.err")
TOKEN=${TOKEN%%$'\n'*}
# The agent's own least-privilege broker user: it may bind org_482's events only, on queues
# named events.$AGENT/... (the broker's admin, AMQP_URL, creates it).
BROKER_OUT=$(RABBITMQ_MANAGEMENT_URL=$MANAGEMENT_URL "$BIN_DIR/fleetctl" principal add \
  --name "$AGENT" --role agent --tenant org_482 --broker 2>"$LOG_DIR/broker-user.err")
AGENT_PASSWORD=$(sed -n 's/^broker password (shown once): //p' <<<"$BROKER_OUT")
[[ -n $AGENT_PASSWORD ]] || { echo "no broker user for the agent: $BROKER_OUT" >&2; exit 1; }
AGENT_BROKER_URL="amqp://fleet-agent.$AGENT:$AGENT_PASSWORD@${AMQP_URL#*@}"

# A person approves what is waiting for them: the pending operation's hash as fleet shows it.
# (This is the one place that knows how an approval is given.)
approve_as_a_person() {
  local pending=""
  for _ in $(seq 1 300); do
    pending=$("$BIN_DIR/fleetctl" list --json |
      jq -r 'first(.[] | select(.approval_status == "pending")) | "\(.operation_id) \(.payload_hash)"')
    [[ -n $pending ]] && break
    sleep 0.2
  done
  [[ -n $pending ]] || { echo "no operation waited for approval" >&2; return 1; }
  read -r op hash <<<"$pending"
  # A person approves with a token of their own, through the API (never the agent's).
  local approver
  approver=$("$BIN_DIR/fleetctl" token create --principal alice --role approver --tenant org_482 2>/dev/null | head -1)
  FLEET_API_URL=$API_URL FLEET_TOKEN=$approver "$BIN_DIR/fleetctl" approve "$op" --hash "$hash"
}

# AGENT_AMQP_URL gives the agent another broker address: one nothing listens on makes it
# follow the operation by long-polling the API instead of through the events.
FLEET_API_URL=$API_URL FLEET_TOKEN=$TOKEN AGENT_WAIT_S=${AGENT_WAIT_S:-90} \
  AMQP_URL=${AGENT_AMQP_URL:-$AGENT_BROKER_URL} AGENT_PRINCIPAL=$AGENT \
  "$VENV/bin/python" -u "$HERE/agent.py" >"$LOG_DIR/agent.out" 2>&1 &
AGENT_PID=$!
PIDS+=($AGENT_PID)
approve_as_a_person >"$LOG_DIR/approval.out" 2>&1 || { cat "$LOG_DIR/approval.out" >&2; exit 1; }

agent_status=0
wait "$AGENT_PID" || agent_status=$?
cat "$LOG_DIR/agent.out"
if [[ $agent_status -ne 0 ]] || ! grep -q '^outcome: succeeded' "$LOG_DIR/agent.out"; then
  echo "the agent did not report succeeded (exit $agent_status)" >&2
  exit 1
fi
echo "python agent: ok"
