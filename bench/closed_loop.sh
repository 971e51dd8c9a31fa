#!/bin/bash
# A closed population of writers against one shard: wrk's connections each send
# the next request as soon as the last is answered, as a fleet of stock ARA
# callbacks does (one request in flight per run; a 503 is not retried, the record
# is lost). Such a population makes a queue as long as it is many, however slow
# the shard, and refusing it only turns writes into failures. Prints, per
# population, the requests refused and the goodput (201s per second). Compare builds:
#   bench/closed_loop.sh dist/src/main.js [other/dist/src/main.js …]
# CONNS (default "128 256 512") and SECS (default 8) per population, one fresh server per build.
set -euo pipefail
. "$(dirname "$0")/lib/wrk_playbooks.sh"
wrk_setup
for main in "$@"; do
  start_logbook "$main"
  for conns in ${CONNS:-128 256 512}; do
    read -r n refused p99 < <(wrk -t1 -c"$conns" -d"${SECS:-8}"s -s "$work/post.lua" "http://127.0.0.1:$port/api/v1/playbooks" | awk '/^requests/{print $2, $4, $6}')
    python3 -c "n=$n; r=$refused; s=${SECS:-8}
print(f'$main: {$conns} writers, {s} s: {n:,} answers, {r:,} of them 503 ({r/max(n,1)*100:.1f} %); goodput {(n-r)/s:,.0f} writes/s; p99 $p99 ms')"
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true
done
