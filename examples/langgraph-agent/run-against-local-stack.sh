#!/usr/bin/env bash
# Runs the LangGraph agent against a real local fleet, with a restart in the middle: the
# agent proposes the payment and is killed (SIGKILL) while it waits; a person approves;
# a new agent process with the same thread id resumes from the checkpoint and the outcome
# event, and reports `succeeded` once. A third run of the finished thread reports nothing
# again.
#
# Needs PostgreSQL and RabbitMQ as in the README (bash .ci/services) and the binaries built
# (cargo build --workspace --bins; BIN_DIR picks another build). The fleet is
# examples/local-fleet.sh's: a fresh database and broker namespace, the processes on free
# ports, the agent's token and own broker user, all removed at the end, also on failure
# (logs and the checkpoint file stay in $LOG_DIR).
#
#   bash examples/langgraph-agent/run-against-local-stack.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=examples/langgraph-agent
VENV=${LANGGRAPH_AGENT_VENV:-target/langgraph-agent-venv}
LOG_DIR=${LOG_DIR:-target/langgraph-agent-logs}
source examples/local-fleet.sh

local_fleet_venv "$VENV" "$HERE/requirements.txt" clients/python/pyproject.toml -- \
  -r "$HERE/requirements.txt" -e clients/python

local_fleet_start lgagent
AGENT=lgagent-$RUN
local_fleet_agent "$AGENT"
THREAD=invoice-inv_9182
CHECKPOINTS=$LOG_DIR/checkpoints.sqlite

AGENT_PID=""
start_agent() { # output file
  FLEET_API_URL=$API_URL FLEET_TOKEN=$AGENT_TOKEN AMQP_URL=$AGENT_BROKER_URL \
    AGENT_PRINCIPAL=$AGENT AGENT_WAIT_S=${AGENT_WAIT_S:-90} \
    "$VENV/bin/python" -u "$HERE/agent.py" --thread-id "$THREAD" --checkpoints "$CHECKPOINTS" \
    >"$1" 2>&1 &
  AGENT_PID=$!
  PIDS+=("$AGENT_PID")
}
# Waited for and gone: forget its pid, which the system may give to another process.
forget_agent() {
  local kept=() pid
  for pid in "${PIDS[@]}"; do [[ $pid == "$AGENT_PID" ]] || kept+=("$pid"); done
  PIDS=("${kept[@]}")
}

# 1. The agent proposes; once it says so, it is killed mid-wait (no chance to tidy up).
start_agent "$LOG_DIR/agent-1.out"
OP=""
for _ in $(seq 1 600); do
  OP=$(sed -n 's/^proposed \(op_[0-9A-Z]*\) .*/\1/p' "$LOG_DIR/agent-1.out")
  [[ -n $OP ]] && break
  kill -0 "$AGENT_PID" 2>/dev/null || break
  sleep 0.1
done
[[ -n $OP ]] || { cat "$LOG_DIR/agent-1.out" >&2; echo "the agent proposed nothing" >&2; exit 1; }
kill -KILL "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true
forget_agent

# 2. A person approves while no agent runs; the operation ends while nobody listens.
local_fleet_approve "$OP" >"$LOG_DIR/approval.out" 2>&1 || { cat "$LOG_DIR/approval.out" >&2; exit 1; }
# The approver's token (local_fleet_approve made it) follows it to its end through the API.
status=$(FLEET_API_URL=$API_URL FLEET_TOKEN=$APPROVER_TOKEN "$BIN_DIR/fleetctl" wait "$OP" --for final --timeout 60s -o json | jq -r .status) || true
[[ $status == succeeded ]] || { echo "$OP did not succeed (status $status)" >&2; exit 1; }

# 3. The same thread again: it resumes from the checkpoint and the queued outcome event.
start_agent "$LOG_DIR/agent-2.out"
agent_status=0
wait "$AGENT_PID" || agent_status=$?
forget_agent

# 4. And once more: the thread is finished, nothing is reported twice.
start_agent "$LOG_DIR/agent-3.out"
again_status=0
wait "$AGENT_PID" || again_status=$?
forget_agent

for run in 1 2 3; do echo "--- agent run $run"; cat "$LOG_DIR/agent-$run.out"; done
reported=$(cat "$LOG_DIR"/agent-{1,2,3}.out | grep -c '^outcome: ' || true)
if [[ $agent_status -ne 0 || $again_status -ne 0 ]] ||
   ! grep -q '^thread .*: resumed from its checkpoint' "$LOG_DIR/agent-2.out" ||
   ! grep -q "^outcome: succeeded: the provider holds pay_" "$LOG_DIR/agent-2.out" ||
   [[ $reported -ne 1 ]]; then
  echo "the agent did not report succeeded exactly once after its restart" \
       "(exits $agent_status, $again_status; $reported outcome lines)" >&2
  exit 1
fi
echo "langgraph agent: ok"
