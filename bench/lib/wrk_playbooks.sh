# Shared by the wrk scripts that post ~1.6 KB playbooks to one logbook per build
# (bench/refusal_cost.sh, bench/closed_loop.sh); sourced, not run.
#   wrk_setup                 checks for wrk; $work (removed on exit) holds post.lua, whose
#                             summary line reads "requests N refused R p99 MS" (R: answers ≥ 400)
#   start_logbook MAIN [ENV=VALUE …]
#                             starts MAIN on a free port with a fresh data dir and 1 shard,
#                             waits for /healthz; sets $port and $pid
wrk_setup() {
  command -v wrk >/dev/null || { echo "wrk is not installed (Debian: apt-get install wrk)" >&2; exit 2; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cat > "$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"path":"/' .. string.rep("p", 1500) .. '.yml","runner_version":"2.16.0","arguments":{"a":1,"b":[1,2,3]}}'
done = function(summary, latency, requests)
  io.write(string.format("requests %d refused %d p99 %.1f\n", summary.requests, summary.errors.status, latency:percentile(99) / 1000))
end
LUA
}

start_logbook() {
  local main=$1; shift
  local dir; dir=$(mktemp -d "$work/data.XXXX")
  port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
  env LOGBOOK_HOST=127.0.0.1 LOGBOOK_PORT="$port" LOGBOOK_DATA_DIR="$dir" LOGBOOK_SHARDS=1 LOGBOOK_LOG_LEVEL=error "$@" \
    node "$main" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
}
