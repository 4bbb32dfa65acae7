# A whole fleet on this machine, for the scripts that run an agent or a client's tests
# against it; sourced, not run (`source examples/local-fleet.sh` from the repository root).
#
# Needs PostgreSQL and RabbitMQ as in the README (bash .ci/services), curl, jq and psql, and
# the binaries built (cargo build --workspace --bins; BIN_DIR picks another build).
# `local_fleet_start` makes a fresh database and broker namespace and starts the provider
# simulator, the four workers, fleet-api and fleet-relay as processes on kernel-chosen
# ports; `local_fleet_agent` gives an agent a token and its own least-privilege broker
# user. An EXIT trap removes everything made here, also on failure: the processes (by pid),
# the namespace's queues and exchanges, the broker users, the database. Logs stay in
# $LOG_DIR.
#
# Settings: BIN_DIR (target/debug), LOG_DIR (required), PG_BASE_URL, AMQP_URL (the broker's
# admin), RABBITMQ_MANAGEMENT_URL, RABBITMQ_MANAGEMENT_AUTH, as in the README.

BIN_DIR=${BIN_DIR:-target/debug}
PG=${PG_BASE_URL:-postgres://postgres@127.0.0.1:5432}
export AMQP_URL=${AMQP_URL:-amqp://guest:guest@127.0.0.1:5672/%2f}
MANAGEMENT_URL=${RABBITMQ_MANAGEMENT_URL:-http://127.0.0.1:15672}
MANAGEMENT_AUTH=${RABBITMQ_MANAGEMENT_AUTH:-guest:guest}

PIDS=()
BROKER_USERS=()
RUN=""

# A venv made once and reinstalled only when one of the stamp files changes.
local_fleet_venv() { # venv, requirements file, [more files whose change means reinstall], -- pip arguments...
  local venv=$1 stamp_files=() ; shift
  while [[ $# -gt 0 && $1 != -- ]]; do stamp_files+=("$1"); shift; done
  shift
  # A venv holds its own absolute path (the scripts' first lines): one that was copied or
  # moved would install into the original, so it is made anew.
  if [[ -x $venv/bin/python ]] &&
     [[ $(head -n 1 "$venv/bin/pip" 2>/dev/null) != "#!$(cd "$venv" && pwd -P)/bin/python"* ]]; then
    rm -rf "$venv"
  fi
  [[ -x $venv/bin/python ]] || python3 -m venv "$venv"
  local stamp
  stamp=$(cat "${stamp_files[@]}")
  if [[ $stamp != "$(cat "$venv/installed-stamp" 2>/dev/null)" ]]; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$@"
    printf '%s' "$stamp" >"$venv/installed-stamp"
  fi
}

local_fleet_cleanup() {
  local status=$?
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [[ -n $RUN ]]; then
    # Every queue and exchange of this run's namespace (and only those: the name is unique),
    # the agents' queues (`<namespace>.events.<agent>/…`) included.
    for kind in queues exchanges; do
      curl -sf -u "$MANAGEMENT_AUTH" "$MANAGEMENT_URL/api/$kind/%2F?columns=name" |
        jq -r --arg p "$RUN." '.[].name | select(startswith($p))' |
        while read -r name; do
          curl -sf -u "$MANAGEMENT_AUTH" -X DELETE \
            "$MANAGEMENT_URL/api/$kind/%2F/$(jq -rn --arg n "$name" '$n|@uri')" >/dev/null || true
        done
    done
    # The agents' broker users (they belong to the broker, not to the namespace).
    for user in "${BROKER_USERS[@]}"; do
      curl -sf -u "$MANAGEMENT_AUTH" -X DELETE "$MANAGEMENT_URL/api/users/$user" >/dev/null || true
    done
    psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS \"fleet_$RUN\" WITH (FORCE)" >/dev/null || true
    # The components' login roles `fleetctl migrate` made for that database: they belong to
    # the cluster, not to the database, and would outlive it. Only the roles marked as this
    # run's database's (in their comment) are dropped, never another deployment's.
    psql "$PG/postgres" -Atc "SELECT quote_ident(rolname) FROM pg_roles
        WHERE shobj_description(oid, 'pg_authid') = 'fleet deployment role of database fleet_$RUN'" 2>/dev/null |
      while read -r role; do
        psql "$PG/postgres" -qc "DROP ROLE IF EXISTS $role" >/dev/null || true
      done
  fi
  if [[ $status -ne 0 ]]; then
    echo "FAILED (logs in $LOG_DIR):" >&2
    tail -n 5 "$LOG_DIR"/*.log >&2 || true
  fi
  exit "$status"
}

# Starts a process in the background, logging to $LOG_DIR/<name>.log; stopped at exit.
local_fleet_spawn() { # binary, VAR=value...
  local bin=$1; shift
  env "$@" "$BIN_DIR/$bin" >"$LOG_DIR/$bin.log" 2>&1 &
  PIDS+=($!)
}

# The address a process logged for `message` (every port is chosen by the kernel).
local_fleet_logged_addr() { # log, message
  for _ in $(seq 1 300); do
    local addr
    addr=$(grep -F "$2" "$1" 2>/dev/null | grep -oE '127\.0\.0\.1:[0-9]+' | head -1 || true)
    if [[ -n $addr ]]; then echo "$addr"; return 0; fi
    sleep 0.1
  done
  echo "no '$2' in $1" >&2
  return 1
}

local_fleet_ready() { # binary
  local admin
  admin=$(local_fleet_logged_addr "$LOG_DIR/$1.log" "admin server listening")
  for _ in $(seq 1 300); do
    curl -sf "http://$admin/readyz" >/dev/null && return 0
    sleep 0.1
  done
  echo "$1 is not ready" >&2
  return 1
}

# Sets RUN, DATABASE_URL, AMQP_NAMESPACE and API_URL, and installs the EXIT trap.
local_fleet_start() { # run-name prefix
  for bin in fleetctl fleet-provider-sim fleet-prepare fleet-execute fleet-reconcile \
             fleet-webhook-ingest fleet-api fleet-relay; do
    [[ -x $BIN_DIR/$bin ]] || { echo "$BIN_DIR/$bin is missing: cargo build --workspace --bins" >&2; return 1; }
  done
  RUN=${1}_$(date +%s)_$$
  export DATABASE_URL="$PG/fleet_$RUN" AMQP_NAMESPACE=$RUN LOG_FORMAT=json
  trap local_fleet_cleanup EXIT
  rm -rf "$LOG_DIR" && mkdir -p "$LOG_DIR"

  "$BIN_DIR/fleetctl" migrate >/dev/null
  local_fleet_spawn fleet-provider-sim SIM_ADDR=127.0.0.1:0
  local sim_url
  sim_url=http://$(local_fleet_logged_addr "$LOG_DIR/fleet-provider-sim.log" "provider simulator listening")
  # A development-only webhook secret (base64 of "dev-only-webhook-secret!"), as the demo's.
  local worker_env=(ADMIN_ADDR=127.0.0.1:0 PAYMENTS_URL="$sim_url" CRM_URL="$sim_url"
                    WEBHOOK_SECRETS=whsec_ZGV2LW9ubHktd2ViaG9vay1zZWNyZXQh WEBHOOK_ADDR=127.0.0.1:0
                    API_ADDR=127.0.0.1:0)
  local workers=(fleet-prepare fleet-execute fleet-reconcile fleet-webhook-ingest fleet-api fleet-relay)
  for bin in "${workers[@]}"; do local_fleet_spawn "$bin" "${worker_env[@]}"; done
  for bin in "${workers[@]}"; do local_fleet_ready "$bin"; done
  API_URL=http://$(local_fleet_logged_addr "$LOG_DIR/fleet-api.log" "api listening")
}

# An agent principal granted org_482 with a token (AGENT_TOKEN) and its own least-privilege
# broker user (AGENT_BROKER_USER, AGENT_BROKER_URL): it may publish intents as itself and
# bind org_482's events only, on queues named events.<name>/... (the broker's admin,
# AMQP_URL, creates it).
local_fleet_agent() { # principal name
  local name=$1 out password
  # The token is the first line printed (read whole: fleetctl must not write into a closed pipe).
  AGENT_TOKEN=$("$BIN_DIR/fleetctl" token create --principal "$name" --role agent --tenant org_482 2>"$LOG_DIR/token-$name.err")
  AGENT_TOKEN=${AGENT_TOKEN%%$'\n'*}
  AGENT_BROKER_USER=fleet-agent.$name
  BROKER_USERS+=("$AGENT_BROKER_USER")
  out=$(RABBITMQ_MANAGEMENT_URL=$MANAGEMENT_URL "$BIN_DIR/fleetctl" principal add \
    --name "$name" --role agent --tenant org_482 --broker 2>"$LOG_DIR/broker-user-$name.err")
  password=$(sed -n 's/^broker password (shown once): //p' <<<"$out")
  [[ -n $password ]] || { echo "no broker user for $name: $out" >&2; return 1; }
  AGENT_BROKER_URL="amqp://$AGENT_BROKER_USER:$password@${AMQP_URL#*@}"
}

# A token for the approver `alice` of org_482 (APPROVER_TOKEN): a person's, never the agent's.
local_fleet_approver_token() {
  APPROVER_TOKEN=$("$BIN_DIR/fleetctl" token create --principal alice --role approver --tenant org_482 2>"$LOG_DIR/token-alice.err")
  APPROVER_TOKEN=${APPROVER_TOKEN%%$'\n'*}
}

# A person approves what is waiting for them: the given operation (or the newest pending
# one) once it is pending, with the hash as the API shows it, read and approved through the
# API with a token of their own (never the agent's). This is the one place that knows how an approval is given.
local_fleet_approve() { # [operation id]
  local want=${1:-} pending=""
  local_fleet_approver_token
  for _ in $(seq 1 300); do
    pending=$(FLEET_API_URL=$API_URL FLEET_TOKEN=$APPROVER_TOKEN "$BIN_DIR/fleetctl" list --approval-status pending -o json | jq -r --arg op "$want" \
      'first(.data[] | select($op == "" or .operation_id == $op))
       | "\(.operation_id) \(.payload_hash)"')
    [[ -n $pending ]] && break
    sleep 0.2
  done
  [[ -n $pending ]] || { echo "no operation waited for approval" >&2; return 1; }
  local op hash
  read -r op hash <<<"$pending"
  FLEET_API_URL=$API_URL FLEET_TOKEN=$APPROVER_TOKEN "$BIN_DIR/fleetctl" approve "$op" --hash "$hash"
}
