#!/bin/bash
# What a refused write costs the server (CPU per request), measured with Debian's wrk:
# one shard whose queue holds one request (LOGBOOK_SHARD_QUEUE=1), 64 connections posting
# a ~1.6 KB playbook for 5 s, so nearly every request is refused with 503. Compare builds:
#   bench/refusal_cost.sh dist/src/main.js [other/dist/src/main.js …]
# QUEUE=1024 admits them all instead (the cost of an admitted durable write).
set -euo pipefail
. "$(dirname "$0")/lib/wrk_playbooks.sh"
wrk_setup
for main in "$@"; do
  start_logbook "$main" LOGBOOK_SHARD_QUEUE="${QUEUE:-1}" LOGBOOK_SHARD_QUEUE_DELAY=0
  cpu0=$(awk '{print $14+$15}' "/proc/$pid/stat")
  n=$(wrk -t1 -c64 -d5s -s "$work/post.lua" "http://127.0.0.1:$port/api/v1/playbooks" | awk '/^requests/{print $2}')
  cpu1=$(awk '{print $14+$15}' "/proc/$pid/stat")
  created=$(curl -s "http://127.0.0.1:$port/api/v1/playbooks?limit=1" | python3 -c 'import sys,json;print(json.load(sys.stdin)["count"])')
  kill "$pid"; wait "$pid" 2>/dev/null || true
  python3 -c "t=($cpu1-$cpu0)/100; n=$n; c=$created
print(f'$main: {n} requests in 5 s, {c} created, {max(0,n-c)} refused; server CPU {t:.2f} s = {t/n*1e6:.0f} us/request')"
done
