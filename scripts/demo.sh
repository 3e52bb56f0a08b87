#!/usr/bin/env bash
# The main job, end to end on one machine with no Tor access: a private Tor network behind a
# censor that blocks Tor (scripts/testbed, block-tor), then Postern getting through it.
#   1. a direct attempt, which the censor stalls;
#   2. the test bed's obfs4 bridge stored with `postern bridges add`, `postern transport use obfs4`,
#      and `postern run` bootstrapping through our own obfs4 client;
#   3. a page fetched through 127.0.0.1:39050 with remote DNS; the route and phase timings printed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source "$(dirname "${BASH_SOURCE[0]}")/swift-env.sh"  # swift on PATH, the tor core on PKG_CONFIG_PATH
postern="$(swift build -c release --show-bin-path)/postern"
[ -x "$postern" ] || { echo "demo: build postern first (make demo does)" >&2; exit 1; }

tb_dir="$PWD/.testbed/demo"
config="$(mktemp -d /tmp/postern-demo.XXXXXX)"
run_pid=""
cleanup() {
  [ -n "$run_pid" ] && kill -INT "$run_pid" 2>/dev/null && wait "$run_pid" 2>/dev/null || true
  scripts/testbed down --dir "$tb_dir" >/dev/null 2>&1 || true
  rm -rf "$config"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
t0=$(date +%s.%N)
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

step "1/4 starting a private Tor network behind a censor that blocks Tor (block-tor)"
scripts/testbed down --dir "$tb_dir" >/dev/null 2>&1 || true
scripts/testbed up --dir "$tb_dir" --censor block-tor
# shellcheck disable=SC1091
source "$tb_dir/env"
in_ns() { scripts/testbed exec --dir "$tb_dir" "$@"; }
p() { in_ns "$postern" --config-dir "$config" "$@"; }
# Background runs start without a shell function in between, so that $! is postern itself
# (`testbed exec` and `ip netns exec` both exec) and SIGINT reaches it.
run_cmd=(scripts/testbed exec --dir "$tb_dir" "$postern" --config-dir "$config" run --tor-options-file "$TB_CLIENT_TORRC")

step "2/4 trying to reach Tor directly (the censor drops it; we give up after 10 s)"
"${run_cmd[@]}" --transport direct --stall-timeout 10 > "$config/direct.log" 2>&1 &
run_pid=$!
for _ in $(seq 1 30); do grep -q "stalled:" "$config/direct.log" && break; sleep 0.5; done
kill -INT "$run_pid" 2>/dev/null; wait "$run_pid" 2>/dev/null || true; run_pid=""
grep "stalled:" "$config/direct.log" || { cat "$config/direct.log"; echo "demo: expected a stall" >&2; exit 1; }

step "3/4 adding the obfs4 bridge (as a user pastes it) and choosing obfs4"
printf 'Bridge %s\n' "$TB_BRIDGE_OBFS4" | p bridges add -
p transport use obfs4
p bridges list

step "4/4 postern run through obfs4 (our Swift obfs4 client), then a page through 127.0.0.1:39050"
started=$(date +%s.%N)
"${run_cmd[@]}" > "$config/run.log" 2>&1 &
run_pid=$!
tail -f "$config/run.log" --pid "$run_pid" 2>/dev/null &
for _ in $(seq 1 240); do grep -q "^ready:" "$config/run.log" && break; kill -0 "$run_pid" 2>/dev/null || break; sleep 0.25; done
grep -q "^ready:" "$config/run.log" || { echo "demo: postern did not become ready" >&2; exit 1; }
ready_s=$(since "$started")
host=$(printf "%s" "$TB_HTTP_NAME_URL" | sed -E 's|^http://([^/:]+).*|\1|')
fetch_started=$(date +%s.%N)
page=$(in_ns curl --silent --show-error --max-time 30 --socks5-hostname 127.0.0.1:39050 "$TB_HTTP_NAME_URL")
fetch_s=$(since "$fetch_started")
if printf '%s' "$page" | grep -q "$TB_HTTP_MARKER"; then
  printf '\nfetched %s through Postern (name resolved at the exit, socks5h): %d bytes, marker found\n' "$TB_HTTP_NAME_URL" "${#page}"
else
  echo "demo: the page did not come through" >&2; exit 1
fi
kill -INT "$run_pid" 2>/dev/null; wait "$run_pid" 2>/dev/null || true; run_pid=""

step "summary"
printf 'censor:           block-tor (direct route stalled)\n'
printf 'route that worked: %s\n' "$(sed -n 's/^ready: .*(route: \(.*\), .*/\1/p' "$config/run.log")"
printf 'start → ready:     %s s\n' "$ready_s"
printf 'page fetch:        %s s (%s)\n' "$fetch_s" "$host"
printf 'whole demo:        %s s\n' "$(since "$t0")"
