#!/usr/bin/env bash
# Builds every libFuzzer target (Package.swift's fuzzTargets) with -sanitize=fuzzer and runs each for
# a set time, from a corpus seeded by scripts/fuzz-seeds.py and grown by earlier runs.
#
#   scripts/fuzz.sh [--seconds N] [--results FILE] [--build-only | --skip-build] [TARGET...]
#
# Prints one line per target: executions, executions per second, coverage (libFuzzer's cov = edges,
# ft = features) and corpus size, then PASS or FAIL. A crash, a broken invariant (a trap), a hang
# (-timeout) or a memory blow-up (-rss_limit_mb) fails the target; the input is kept as
# fuzz-artifacts/<target>/crash-* (or timeout-*, oom-*) and the replay command is printed. With
# --results, "PASS target" / "FAIL target" lines are written to FILE (scripts/run-tests.sh counts
# them). Exit status: 0 when every target passed. FUZZ_ARTIFACTS (default fuzz-artifacts) moves the
# corpora and artifacts elsewhere.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source "$(dirname "${BASH_SOURCE[0]}")/swift-env.sh"  # swift on PATH, the tor core on PKG_CONFIG_PATH

seconds=${FUZZ_SECONDS:-60}
results=""
build_only=0
skip_build=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --results) results="$2"; shift 2 ;;
    --build-only) build_only=1; shift ;;
    --skip-build) skip_build=1; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 64 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(sed -n 's/^    ("\([A-Za-z0-9]*Fuzzer\)", .*/\1/p' Package.swift)
fi
[ ${#targets[@]} -gt 0 ] || { echo "fuzz.sh: no fuzz targets found in Package.swift" >&2; exit 1; }

scratch=.build-fuzz
build_start=$(date +%s)
for target in "${targets[@]}"; do
  if [ "$skip_build" = 1 ]; then
    [ -x "$scratch/release/$target" ] || { echo "fuzz.sh: $target is not built (--skip-build)" >&2; exit 1; }
    continue
  fi
  echo "== building $target (release, -sanitize=fuzzer)" >&2
  swift build -c release --scratch-path "$scratch" -Xswiftc -sanitize=fuzzer --product "$target" 2>&1 | grep -v '^\[' >&2 || true
  [ -x "$scratch/release/$target" ] || { echo "fuzz.sh: $target did not build" >&2; exit 1; }
done
echo "== fuzz build took $(( $(date +%s) - build_start )) s" >&2
[ "$build_only" = 0 ] || exit 0

artifacts_root=${FUZZ_ARTIFACTS:-fuzz-artifacts}
python3 scripts/fuzz-seeds.py "$artifacts_root/seeds"
[ -z "$results" ] || : > "$results"
# Targets run side by side, one per core (FUZZ_JOBS, default: the number of cores): each libFuzzer
# process is single-threaded, so two cores halve the stage's wall time at the same executions per
# target. Each target's line is printed in the list's order once all have finished.
parallel=${FUZZ_JOBS:-$(nproc)}
lines_dir=$(mktemp -d)
trap 'rm -rf "$lines_dir"' EXIT
run_target() { # $1 = index, $2 = target; writes $lines_dir/<index>.line, .status and .detail
  local index="$1" target="$2"
  local corpus=$artifacts_root/corpus/$target
  local artifacts=$artifacts_root/$target
  mkdir -p "$corpus" "$artifacts"
  [ ! -d "$artifacts_root/seeds/$target" ] || cp "$artifacts_root/seeds/$target"/* "$corpus"/
  local log=$artifacts/last-run.log status
  # SWIFT_BACKTRACE=enable=no: Swift's crash reporter would take the signal before libFuzzer can
  # save the input.
  if SWIFT_BACKTRACE=enable=no "$scratch/release/$target" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
       -max_len=16384 -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1; then
    status=PASS
  else
    status=FAIL
  fi
  local executions rate last cov ft units
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  units=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$last")
  if [ -z "$executions" ]; then
    # Killed before libFuzzer printed its stats (a crash prints none): take the last status line.
    executions=$(sed -n 's/^#\([0-9]*\).*/\1/p' <<<"$last")
  fi
  printf '%-30s %12s %9s %7s %7s %7s  %s\n' "$target" "${executions:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${units:-?}" "$status" \
    >"$lines_dir/$index.line"
  echo "$status" >"$lines_dir/$index.status"
  : >"$lines_dir/$index.detail"
  if [ "$status" = FAIL ]; then
    grep -E 'invariant broken|Fatal error|ERROR: libFuzzer|deadly signal|Test unit written' "$log" | head -n 5 | sed 's/^/    /' >"$lines_dir/$index.detail" || true
    for input in "$artifacts"/crash-* "$artifacts"/timeout-* "$artifacts"/oom-*; do
      [ -e "$input" ] && echo "    replay: $scratch/release/$target $input" >>"$lines_dir/$index.detail"
    done
  fi
  return 0
}
for index in "${!targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  run_target "$index" "${targets[$index]}" &
done
wait
failed=0
printf '%-30s %12s %9s %7s %7s %7s  %s\n' target executions exec/s cov ft corpus result
for index in "${!targets[@]}"; do
  target=${targets[$index]}
  status=$(cat "$lines_dir/$index.status" 2>/dev/null || echo FAIL)
  cat "$lines_dir/$index.line" 2>/dev/null || printf '%-30s %12s  %s\n' "$target" "?" "FAIL (no result)"
  [ -z "$results" ] || echo "$status $target" >>"$results"
  if [ "$status" = FAIL ]; then
    failed=$((failed + 1))
    cat "$lines_dir/$index.detail" >&2 2>/dev/null || true
  fi
done
[ "$failed" = 0 ]
