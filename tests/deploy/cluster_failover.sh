#!/usr/bin/env bash
# Starts 3 oscar-server replicas and HAProxy with deploy/oscar-cluster.sh on
# the loopback address, runs tests/server/js/cluster_failover.mjs against
# them, prints HAProxy's retry count, and always stops the cluster.
# Exit 77: skipped (something it needs is not installed).
set -euo pipefail
BIN="${1:?usage: cluster_failover.sh BUILD_BIN_DIR}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
JS="$ROOT/tests/server/js"
for tool in haproxy curl node; do
  command -v "$tool" >/dev/null || { echo "SKIPPED: $tool is not installed (scripts/setup-deps.sh installs it)"; exit 77; }
done
[ -d "$JS/node_modules/openai" ] || { echo "SKIPPED: no node_modules in $JS (npm ci there)"; exit 77; }

MODEL="$ROOT/models/oscar-tiny/oscar-tiny-f16.gguf"
DIR="$(mktemp -d /tmp/oscar-cluster-test.XXXXXX)"
BASE=$((20000 + ($$ % 1500) * 4))
LB=$((BASE + 3))
CLUSTER=("$ROOT/deploy/oscar-cluster.sh")
export OSCAR_SERVER="$BIN/oscar-server"
cleanup() { "${CLUSTER[@]}" stop --dir "$DIR" >/dev/null 2>&1 || true; [ -n "${KEEP:-}" ] || rm -rf "$DIR"; }
trap cleanup EXIT

"${CLUSTER[@]}" start -n 3 --port "$LB" --base-port "$BASE" --dir "$DIR" -- \
  -m "$MODEL" -c 4096 -np 4 -t 1 --metrics -ctk q2_0 -ctv q2_0 --kv-hp-sink 16 --kv-hp-recent 64

OSCAR_URL="http://127.0.0.1:$LB" OSCAR_REPLICA_PORTS="$BASE,$((BASE + 1)),$((BASE + 2))" OSCAR_CLUSTER_DIR="$DIR" \
OSCAR_RESTART_CMD="'$ROOT/deploy/oscar-cluster.sh' restart-replica 2 --dir '$DIR'" \
  timeout 300 node "$JS/cluster_failover.mjs"
rc=$?
# HAProxy's httplog: after the 4-letter termination state come
# actconn/feconn/beconn/srv_conn/retries ("+N" when redispatched).
retries=$(awk '{ for (i = 1; i < NF; i++) if ($i ~ /^[-A-Za-z][-A-Za-z][-A-Za-z][-A-Za-z]$/ && $(i + 1) ~ /^[0-9]+\/[0-9]+\/[0-9]+\/[0-9]+\/\+?[0-9]+$/) { n = split($(i + 1), a, "/"); sub(/\+/, "", a[n]); s += a[n] } } END { print s + 0 }' "$DIR/haproxy.log")
echo "HAProxy retried $retries request(s) on another replica"
exit $rc
