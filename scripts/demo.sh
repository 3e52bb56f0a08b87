#!/usr/bin/env bash
# The main job, end to end on one machine with no Tor access, as users meet it: a private Tor
# network behind a censor that blocks Tor (scripts/testbed, block-tor), then Postern getting through.
#   1. a direct attempt, which the censor stalls;
#   2. the bridges pasted as people receive them (a message with prose around the lines), stored by
#      `postern bridges add -`, and `postern run` with the transport `auto`: connection assist finds
#      a way in (the route and phase timings are printed);
#   3. a page fetched through 127.0.0.1:39050 with remote DNS;
#   4. a short A/B of obfs4, snowflake and direct (`postern ab`) on a link where they differ (the
#      test bed's `throttle-obfs4` profile: the obfs4 bridge's path capped at 256 kbit/s, as censors
#      throttle what they recognise), ending with its verdict.
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

step "1/5 starting a private Tor network behind a censor that blocks Tor (block-tor)"
scripts/testbed down --dir "$tb_dir" >/dev/null 2>&1 || true
scripts/testbed up --dir "$tb_dir" --censor block-tor
# shellcheck disable=SC1091
source "$tb_dir/env"
in_ns() { scripts/testbed exec --dir "$tb_dir" "$@"; }
p() { in_ns "$postern" --config-dir "$config" "$@"; }
# Background runs start without a shell function in between, so that $! is postern itself
# (`testbed exec` and `ip netns exec` both exec) and SIGINT reaches it.
run_cmd=(scripts/testbed exec --dir "$tb_dir" "$postern" --config-dir "$config" run --tor-options-file "$TB_CLIENT_TORRC")

step "2/5 trying to reach Tor directly (the censor drops it; we give up after 10 s)"
"${run_cmd[@]}" --transport direct --stall-timeout 10 > "$config/direct.log" 2>&1 &
run_pid=$!
for _ in $(seq 1 30); do grep -q "stalled:" "$config/direct.log" && break; sleep 0.5; done
kill -INT "$run_pid" 2>/dev/null; wait "$run_pid" 2>/dev/null || true; run_pid=""
grep "stalled:" "$config/direct.log" || { cat "$config/direct.log"; echo "demo: expected a stall" >&2; exit 1; }

step "3/5 pasting the bridges as they arrived (prose and all), transport auto, postern run"
# What a user gets from a friend or a bot: lines inside a message. The paste parser keeps the
# bridge lines and says what it skipped.
{
  printf 'Hi! These are the bridges I promised. Copy everything into Postern:\n\n'
  printf '  Bridge %s\n' "$TB_BRIDGE_OBFS4"
  printf '  %s\n\n' "$TB_BRIDGE_SNOWFLAKE"
  printf 'If one stops working, tell me and I will send new ones. Stay safe.\n'
} > "$config/message.txt"
p bridges add - < "$config/message.txt"
p transport use auto
p bridges list
started=$(date +%s.%N)
"${run_cmd[@]}" > "$config/run.log" 2>&1 &
run_pid=$!
tail -f "$config/run.log" --pid "$run_pid" 2>/dev/null &
for _ in $(seq 1 240); do grep -q "^ready:" "$config/run.log" && break; kill -0 "$run_pid" 2>/dev/null || break; sleep 0.25; done
grep -q "^ready:" "$config/run.log" || { echo "demo: postern did not become ready" >&2; exit 1; }
ready_s=$(since "$started")

step "4/5 a page through 127.0.0.1:39050 (name resolved at the exit)"
host=$(printf "%s" "$TB_HTTP_NAME_URL" | sed -E 's|^http://([^/:]+).*|\1|')
fetch_started=$(date +%s.%N)
page=$(in_ns curl --silent --show-error --max-time 30 --socks5-hostname 127.0.0.1:39050 "$TB_HTTP_NAME_URL")
fetch_s=$(since "$fetch_started")
if printf '%s' "$page" | grep -q "$TB_HTTP_MARKER"; then
  printf '\nfetched %s through Postern (socks5h): %d bytes, marker found\n' "$TB_HTTP_NAME_URL" "${#page}"
else
  echo "demo: the page did not come through" >&2; exit 1
fi
kill -INT "$run_pid" 2>/dev/null; wait "$run_pid" 2>/dev/null || true; run_pid=""

step "5/5 which way in is best here? A/B of obfs4, snowflake and direct on a throttled link (4 trials each)"
# The censor now also throttles the obfs4 bridge's path to 256 kbit/s (link profile throttle-obfs4);
# both transports still get through. Each trial is a child `postern run` with a fresh data
# directory and a SOCKS port of its own; the table and the verdict come from the trials.
# Link profiles need the bed's namespace; in the host-loopback fallback the A/B runs on the plain
# link (where every route takes tor's tick time) and says so.
link="throttle-obfs4"
if [ "${TB_MODE:-}" = netns ]; then
  scripts/testbed profile "$link" --dir "$tb_dir" >/dev/null
else
  link="none"
  echo "note: host-loopback test bed: no link profile, the A/B runs on the plain link"
fi
ab_started=$(date +%s.%N)
p ab obfs4 snowflake direct --trials 4 --parallel 3 --seed 15 --trial-timeout direct=15 --trial-timeout 90 \
  --probe-url "$TB_BLOB_URL" --probe-bytes 262144 --tor-options-file "$TB_CLIENT_TORRC" --network "demo (block-tor, link $link)" \
  > "$config/ab.log" 2> "$config/ab.err" || { cat "$config/ab.err"; echo "demo: postern ab failed" >&2; exit 1; }
ab_s=$(since "$ab_started")
cat "$config/ab.log"
grep -qE "^(Best here|No clear best|No route got through)" "$config/ab.log" || { echo "demo: the A/B gave no verdict" >&2; exit 1; }

step "summary"
printf 'censor:           block-tor (direct route stalled); link profile for the A/B: %s\n' "$link"
printf 'route that worked: %s\n' "$(sed -n 's/^ready: .*(route: \(.*\), .*/\1/p' "$config/run.log")"
printf 'start → ready:     %s s\n' "$ready_s"
printf 'page fetch:        %s s (%s)\n' "$fetch_s" "$host"
printf 'A/B (12 trials):   %s s; %s\n' "$ab_s" "$(grep -E '^(Best here|No clear best|No route got through)' "$config/ab.log")"
printf 'whole demo:        %s s\n' "$(since "$t0")"
