#!/bin/bash
# What a refused write costs the server (CPU per request), measured with Debian's wrk:
# one shard whose queue holds one request (LOGBOOK_SHARD_QUEUE=1), 64 connections posting
# a ~1.6 KB playbook for 5 s, so nearly every request is refused with 503. Compare builds:
#   bench/refusal_cost.sh dist/src/main.js [other/dist/src/main.js …]
# QUEUE=1024 admits them all instead (the cost of an admitted durable write).
set -euo pipefail
command -v wrk >/dev/null || { echo "wrk is not installed (Debian: apt-get install wrk)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"path":"/' .. string.rep("p", 1500) .. '.yml","runner_version":"2.16.0","arguments":{"a":1,"b":[1,2,3]}}'
done = function(summary, latency, requests) io.write(string.format("requests %d\n", summary.requests)) end
LUA
for main in "$@"; do
  dir=$(mktemp -d "$work/data.XXXX")
  port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
  LOGBOOK_HOST=127.0.0.1 LOGBOOK_PORT=$port LOGBOOK_DATA_DIR=$dir LOGBOOK_SHARDS=1 LOGBOOK_SHARD_QUEUE=${QUEUE:-1} \
    LOGBOOK_SHARD_QUEUE_DELAY=0 LOGBOOK_LOG_LEVEL=error node "$main" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
  cpu0=$(awk '{print $14+$15}' "/proc/$pid/stat")
  n=$(wrk -t1 -c64 -d5s -s "$work/post.lua" "http://127.0.0.1:$port/api/v1/playbooks" | awk '/^requests/{print $2}')
  cpu1=$(awk '{print $14+$15}' "/proc/$pid/stat")
  created=$(curl -s "http://127.0.0.1:$port/api/v1/playbooks?limit=1" | python3 -c 'import sys,json;print(json.load(sys.stdin)["count"])')
  kill "$pid"; wait "$pid" 2>/dev/null || true
  python3 -c "t=($cpu1-$cpu0)/100; n=$n; c=$created
print(f'$main: {n} requests in 5 s, {c} created, {max(0,n-c)} refused; server CPU {t:.2f} s = {t/n*1e6:.0f} us/request')"
done
