#!/usr/bin/env bash
# A local cluster: N oscar-server replicas behind HAProxy, on one machine.
#
#   deploy/oscar-cluster.sh start [-n N] [--port P] [--base-port B] [--dir D] [-- SERVER_ARGS...]
#   deploy/oscar-cluster.sh stop  [--dir D]
#   deploy/oscar-cluster.sh status [--dir D]
#   deploy/oscar-cluster.sh restart-replica I [--dir D]   (starts replica I again)
#
# start launches replicas on B, B+1, ... (default 8081...) with --mmap, so
# they share one copy of the model in the page cache, and HAProxy on P
# (default 8080) with deploy/haproxy/haproxy.cfg and session_key.lua; it
# returns once every replica answers /health with 200 (or fails, printing the
# replica logs). Everything after `--` goes to each oscar-server (the model,
# -c, -np, cache types...). D (default /tmp/oscar-cluster) holds the pid files,
# the logs and the generated HAProxy configuration.
# Environment: OSCAR_SERVER (the binary; default build/bin/oscar-server),
# OSCAR_CLUSTER_HOST (default 127.0.0.1), OSCAR_CLUSTER_WAIT_S (default 300).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SERVER="${OSCAR_SERVER:-$ROOT/build/bin/oscar-server}"
HOST="${OSCAR_CLUSTER_HOST:-127.0.0.1}"
WAIT_S="${OSCAR_CLUSTER_WAIT_S:-300}"

cmd="${1:-}"; shift || true
replica=""
if [ "$cmd" = restart-replica ]; then replica="${1:?restart-replica needs an index}"; shift; fi
n=3; port=8080; base=8081; dir=/tmp/oscar-cluster; server_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -n) n="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --base-port) base="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --) shift; server_args=("$@"); break ;;
    *) echo "oscar-cluster: unknown option '$1'" >&2; exit 2 ;;
  esac
done

healthy() { curl -fs -o /dev/null --max-time 2 "http://$HOST:$1/health"; }

start_replica() {  # index, port
  "$SERVER" --mmap --host "$HOST" --port "$2" "${server_args[@]}" >"$dir/replica-$1.log" 2>&1 &
  echo $! >"$dir/replica-$1.pid"
}

write_haproxy_cfg() {
  local servers="" i
  for ((i = 1; i <= n; i++)); do servers+="    server r$i $HOST:$((base + i - 1))"$'\n'; done
  # The shipped file with its replica block replaced by ours.
  awk -v servers="$servers" '
    /# BEGIN replicas/ { print; printf "%s", servers; skip = 1; next }
    /# END replicas/ { skip = 0 }
    !skip { print }' "$ROOT/deploy/haproxy/haproxy.cfg" >"$dir/haproxy.cfg"
}

stop_pidfile() {  # file: SIGTERM (replicas drain), then SIGKILL after 30 s
  [ -f "$1" ] || return 0
  local pid; pid="$(cat "$1")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$1"
}

case "$cmd" in
  start)
    command -v haproxy >/dev/null || { echo "oscar-cluster: haproxy is not installed (apt-get install haproxy)" >&2; exit 1; }
    [ -x "$SERVER" ] || { echo "oscar-cluster: no server binary at $SERVER (run scripts/build.sh)" >&2; exit 1; }
    mkdir -p "$dir"
    # Kept for restart-replica: the port range and the server's arguments.
    { echo "base=$base"; printf 'server_args=('; printf '%q ' "${server_args[@]}"; echo ')'; } >"$dir/cluster.env"
    for ((i = 1; i <= n; i++)); do start_replica "$i" "$((base + i - 1))"; done
    write_haproxy_cfg
    OSCAR_LUA="$ROOT/deploy/haproxy/session_key.lua" OSCAR_LB_BIND="$HOST:$port" \
      haproxy -f "$dir/haproxy.cfg" >"$dir/haproxy.log" 2>&1 &
    echo $! >"$dir/haproxy.pid"
    deadline=$((SECONDS + WAIT_S))
    for ((i = 1; i <= n; i++)); do
      until healthy "$((base + i - 1))"; do
        if ! kill -0 "$(cat "$dir/replica-$i.pid")" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
          echo "oscar-cluster: replica $i did not become ready; its log:" >&2
          tail -20 "$dir/replica-$i.log" >&2
          exit 1
        fi
        sleep 0.2
      done
    done
    echo "oscar-cluster: $n replicas ready on $HOST:$base-$((base + n - 1)); HAProxy on http://$HOST:$port"
    ;;
  stop)
    # The balancer first, so no new work reaches a draining replica.
    stop_pidfile "$dir/haproxy.pid"
    for f in "$dir"/replica-*.pid; do [ -e "$f" ] && stop_pidfile "$f"; done
    echo "oscar-cluster: stopped"
    ;;
  restart-replica)
    # shellcheck disable=SC1091
    source "$dir/cluster.env"
    stop_pidfile "$dir/replica-$replica.pid"
    start_replica "$replica" "$((base + replica - 1))"
    ;;
  status)
    for f in "$dir"/replica-*.pid "$dir/haproxy.pid"; do
      [ -e "$f" ] || continue
      if kill -0 "$(cat "$f")" 2>/dev/null; then echo "$(basename "$f" .pid): running"; else echo "$(basename "$f" .pid): stopped"; fi
    done
    ;;
  *)
    sed -n '2,17p' "$0"; exit 2 ;;
esac
