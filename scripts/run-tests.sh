#!/usr/bin/env bash
# The whole test run: dependencies, build, two test beds, the tests, then teardown. The tests run
# inside a test bed's network namespace, where the only network is loopback.
#
# Tests that run an in-process tor (TestBedSuite) get a process each: tor_api allows one core at a
# time, tor keeps some state from run to run (docs/TOR-CORE-PROVENANCE.md), and one process per
# test keeps each test's result its own. They run two at a time, each in a test bed of its own
# (two namespaces: a test's censor, link profile and ports cannot touch the other's), except the
# few that measure throughput or timing against a profile or load both cores, which run alone
# first (`solo_tests` below). Everything else runs in one process per group, in the first bed.
#
# The fuzz stage (scripts/fuzz.sh: every libFuzzer target for FUZZ_CI_SECONDS, default 25) runs in
# the background at the lowest CPU priority while the test-bed tests run, after the fuzz build. Then the
# leak check (scripts/check-leaks.py): no test bed bridge's address, fingerprint or cert in any output
# of the run or any file the tests wrote, including files they deleted (scripts/keep-files.py keeps a
# hard link to each). Each fuzz target and each check counts as one test in the final line. Outputs
# stay in .test-output/ for inspection.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source "$(dirname "${BASH_SOURCE[0]}")/swift-env.sh"  # swift on PATH, the tor core on PKG_CONFIG_PATH
# Progress lines carry the time since the run started, so a run's log shows where its time went
# (`make test` has a 35-minute budget on two cores).
phase() { printf '== %d:%02d %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }
POSTERN_DEPS_WITHOUT_TOR_CORE=1 scripts/install-deps.sh
scripts/install-test-peers.sh
fast=0
case "${1:-}" in
  --fast) fast=1 ;;
  "") ;;
  *) echo "run-tests.sh: unknown option $1 (--fast: unit, CLI and transport tests only)" >&2; exit 64 ;;
esac
tb_dir="$PWD/.testbed/test"
tb_dir_b="$PWD/.testbed/test-b"
# Ends a background process and everything it started (the fuzz stage's libFuzzer processes).
kill_tree() { local child; for child in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$child"; done; kill "$1" 2>/dev/null || true; }
# Both beds go down at once: each teardown mostly waits for its processes to exit.
beds_down() {
  scripts/testbed down --dir "$tb_dir" || true &
  [ "$fast" = 1 ] || scripts/testbed down --dir "$tb_dir_b" >/dev/null 2>&1 || true &
  wait
}
# The test beds come up while the tor core and Swift build: a bed needs nothing the builds make
# (its Go stand-ins are built by scripts/testbed itself, once, into .build/), and most of its start
# is waiting for the bed's tor network to publish a consensus; the Go build fills the cores the
# tor core's single-threaded configure and link steps leave idle. One after the other: the second
# shares the Go stand-ins the first one built. Their output, which names their bridges, goes to
# files outside the run directory the leak check reads; the first bed's is shown once it is up.
bed_up_log="$PWD/.testbed/test-up.log"
bed_up_log_b="$PWD/.testbed/test-b-up.log"
mkdir -p "$PWD/.testbed"
rm -f "$bed_up_log.status" "$bed_up_log_b.status"
scripts/testbed down --dir "$tb_dir" >/dev/null 2>&1 || true
[ "$fast" = 1 ] || scripts/testbed down --dir "$tb_dir_b" >/dev/null 2>&1 || true
phase "building the tor core and Postern, and starting the test beds alongside"
(
  if scripts/testbed up --dir "$tb_dir" --censor none >"$bed_up_log" 2>&1; then echo 0; else echo 1; fi >"$bed_up_log.status"
  if [ "$fast" = 0 ]; then
    if scripts/testbed up --dir "$tb_dir_b" --censor none >"$bed_up_log_b" 2>&1; then echo 0; else echo 1; fi >"$bed_up_log_b.status"
  fi
) &
beds_starting=$!
trap 'kill_tree "$beds_starting"; beds_down' EXIT
scripts/build-tor-core.sh
swift build --build-tests
phase "built"
# Two builds the tests do not need at once run in the background at the lowest CPU priority, so
# they take only the cycles the tests leave idle (the test-bed tests mostly wait on the network):
# the fuzz targets (release, -sanitize=fuzzer; 10 minutes in the background), then the embedding
# example, its own package that compiles Postern a second time (453 s measured in the foreground on
# the 2-core machine, docs/EMBEDDING.md; its test, EmbeddingExampleTests, runs last), while the
# fuzz stage runs. The two builds one after the other: two Swift builds at once would double the
# memory for no gain on two cores. Fuzz targets first: the fuzz stage takes a fixed wall time (each
# target FUZZ_CI_SECONDS, two at a time), and started after both builds it ended the run later than
# the test-bed tests did (a fresh-clone run on 2026-12-05: the tests done at 33:06, the stage at 33:55).
embed_log="$PWD/.build/embed-example-build.log"
embed_status="$PWD/.build/embed-example-build.status"
fuzz_build_log="$PWD/.build/fuzz-build.log"
fuzz_results="$PWD/.build/fuzz-results"
fuzz_stage_log="$PWD/.build/fuzz-stage.log"
rm -f "$embed_status" "$fuzz_build_log" "$fuzz_results" "$fuzz_stage_log"
if [ "$fast" = 0 ]; then
  phase "building the fuzz targets, then Examples/EmbedNostr beside the fuzz stage, in the background (nice 19)"
  (
    nice -n 19 scripts/fuzz.sh --build-only >"$fuzz_build_log" 2>&1 || true
    # The fuzz stage, in the cycles the test-bed tests leave idle (they mostly wait on the
    # network). Each target runs its FUZZ_CI_SECONDS of wall time; its line reports how many
    # executions that gave. Its output goes to the run's logs once the run directory exists.
    fuzz_stage=""
    if grep -q '^== fuzz build took' "$fuzz_build_log" 2>/dev/null; then
      nice -n 19 scripts/fuzz.sh --seconds "${FUZZ_CI_SECONDS:-25}" --skip-build --results "$fuzz_results" >"$fuzz_stage_log" 2>&1 &
      fuzz_stage=$!
    fi
    nice -n 19 swift build --package-path Examples/EmbedNostr >"$embed_log" 2>&1
    echo $? >"$embed_status"
    [ -z "$fuzz_stage" ] || wait "$fuzz_stage" || true
  ) &
  background_builds=$!
fi
trap 'kill_tree "$beds_starting"; [ -z "${background_builds:-}" ] || kill_tree "$background_builds"; beds_down' EXIT
phase "waiting for the test beds to be up"
wait "$beds_starting" || true
cat "$bed_up_log" >&2 || true
if [ "$(cat "$bed_up_log.status" 2>/dev/null)" != 0 ]; then
  echo "run-tests.sh: the test bed did not come up (its output above)" >&2
  exit 1
fi
export POSTERN_TESTBED_ENV="$tb_dir/env"
in_bed() { scripts/testbed exec --dir "$tb_dir" "$@"; }
second_bed=""
if [ "$fast" = 0 ]; then
  if [ "$(cat "$bed_up_log_b.status" 2>/dev/null)" = 0 ]; then
    second_bed="$tb_dir_b"
  else
    echo "== the second test bed did not come up; the test-bed tests run one at a time (.testbed/test-b-up.log):" >&2
    tail -n 20 "$bed_up_log_b" >&2 || true
  fi
fi

# Everything the run writes goes under one directory: test outputs in logs/, the tests' own files in
# tmp/ (their TMPDIR), hard links to every file created there in kept/.
run_dir="$PWD/.test-output"
rm -rf "$run_dir"
mkdir -p "$run_dir/logs" "$run_dir/tmp" "$run_dir/kept"
python3 scripts/keep-files.py "$run_dir/tmp" "$run_dir/kept" >/dev/null &
keeper=$!
trap 'kill "$keeper" 2>/dev/null || true; [ -z "${background_builds:-}" ] || kill_tree "$background_builds"; beds_down' EXIT
log_number=0

passed=0 failed=0
failures=()
log_name() { # $1 = number, $2 = label
  printf '%s/logs/%03d-%s.log' "$run_dir" "$1" "$(printf '%s' "$2" | tr -c 'A-Za-z0-9._-' '_' | cut -c1-80)"
}
tally() { # $1 = label, $2 = log, $3 = exit status of its `swift test`
  local label="$1" log="$2" status="$3"
  # Swift Testing's closing line: "Test run with N tests in M suites passed/failed ..."
  # and one "✘ Test NAME(...) failed ..." line per failed test (parameterized ones once).
  local count bad
  count=$(sed -n 's/.*Test run with \([0-9]*\) tests\{0,1\} .*/\1/p' "$log" | tail -n 1)
  count=${count:-0}
  bad=$(grep -E '^✘ Test [^ ]+\(.*\) (with [0-9]+ test cases )?failed' "$log" | grep -vc '^✘ Test run ' || true)
  if [ "$status" = 0 ] && [ "$count" -gt 0 ]; then
    passed=$((passed + count))
  else
    # A crash leaves no summary: the whole group counts as one failure.
    ((bad > 0)) || bad=1
    ((count >= bad)) && passed=$((passed + count - bad))
    failed=$((failed + bad))
    failures+=("$label")
    while IFS= read -r line; do failures+=("  $line"); done < <(grep -E '^✘ Test [^ ]+\(.*\) (with [0-9]+ test cases )?failed' "$log" | grep -v '^✘ Test run ' | sed -E 's/^✘ Test ([^ ]+).*/\1/')
  fi
}
run_group() { # $1 = label, rest = swift test arguments; in the first bed, output shown as it comes
  local label="$1"; shift
  local log status
  log_number=$((log_number + 1))
  log=$(log_name "$log_number" "$label")
  if in_bed env TMPDIR="$run_dir/tmp" swift test --skip-build "$@" 2>&1 | tee "$log"; then status=0; else status=1; fi
  tally "$label" "$log" "$status"
}
check() { # $1 = label, rest = command; one test
  local label="$1"; shift
  if "$@" 2>&1 | tee "$run_dir/logs/check-$(printf '%s' "$label" | tr -c 'A-Za-z0-9._-' '_').log"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failures+=("$label")
  fi
}

# The test binary itself, not `swift test`: SwiftPM holds a lock on .build for as long as a
# `swift test` runs, so a second one would wait for the first.
test_binary=$(find "$(swift build --show-bin-path)" -maxdepth 1 -name '*PackageTests.xctest' | head -n 1)
phase "unit, CLI and transport tests (four processes, one after the other, and the snowflake tests beside them)"
# Debian's firefox-esr (FirefoxComparisonTests) takes both cores for seconds while it starts: in the
# first seconds of the shared process, where every suite starts at once, that held tests with 5 s
# handshake deadlines off the CPU for 17-20 s (two fresh-clone runs, one such test each). It runs
# alone, in a process of its own, after the shared one.
#
# Tests that set process environment variables (libcurl and the plugin launcher read them) also run
# in a process of their own: setenv while another thread's Foundation Process.run copies the
# environment crashed the shared process (signal 11 in Process.run's memcpy, a `make test-fast` run
# on 2026-12-02, while ProxyEnvironmentTests set its variables and CLITests started children).
#
# And the unit tests run as four processes, one after the other, rather than one: Foundation's
# Process.run() on Linux (Swift 6.3.1) reads 256 bytes of every /proc/self/fd entry's name whatever
# its length (swift-corelibs-foundation pull request 5472, merged after 6.3.1). Once a process holds
# more than about 1,360 descriptors, glibc's 32 KiB directory buffer fills and that read can run off
# the heap: signal 11 in Process.run twice on 2026-12-02, the one shared process then holding up to
# 1,915 descriptors (sockets of the transport tests, pipes of the CLI tests' children, at once).
# Measured per group the same day: transports 1,031 at most, CLI and store 760, core 147.
environment_tests='ProxyEnvironmentTests|thePluginGetsThePTEnvironmentAndNoProxyVariables'
unit_skips=(--skip '\.TestBedSuite/' --skip 'FirefoxComparisonTests' --skip "$environment_tests")
grouped='TransportTests|TransportTLSTests|WebtunnelTests|SnowflakeTests|CoreTests|CLITests|BridgeConfigTests|BridgeQRTests|PosternTrialsTests|TrialAnalysisTests'
# The snowflake tests run beside the others, in the second bed (the first when there is only one),
# in a process of their own: most of their time is waiting for one of a bed's two snowflake proxies
# (Debian's 2.5.1 proxy stays busy for 20 s after a rendezvous whose data channel never opens),
# 75 s of waiting for 8 s of CPU, measured alone.
snowflake_bed="${second_bed:-$tb_dir}"
log_number=$((log_number + 1))
snowflake_log=$(log_name "$log_number" "unit: snowflake")
(
  if scripts/testbed exec --dir "$snowflake_bed" env POSTERN_TESTBED_ENV="$snowflake_bed/env" TMPDIR="$run_dir/tmp" NO_COLOR=1 \
      "$test_binary" --testing-library swift-testing "${unit_skips[@]}" --filter '^SnowflakeTests\.' >"$snowflake_log" 2>&1; then
    echo 0
  else
    echo 1
  fi >"$snowflake_log.status"
) &
snowflake_group=$!
run_group "unit: transports" "${unit_skips[@]}" --filter '^(TransportTests|TransportTLSTests|WebtunnelTests)\.'
run_group "unit: core" "${unit_skips[@]}" --filter '^CoreTests\.'
run_group "unit: CLI, store, trials" "${unit_skips[@]}" --filter '^(CLITests|BridgeConfigTests|BridgeQRTests|PosternTrialsTests|TrialAnalysisTests)\.'
run_group "unit: the rest" "${unit_skips[@]}" --skip "^($grouped)\."
wait "$snowflake_group" || true
phase "unit: snowflake (ran beside the groups above, in $(basename "$snowflake_bed"))"
cat "$snowflake_log"
tally "unit: snowflake" "$snowflake_log" "$(cat "$snowflake_log.status" 2>/dev/null || echo 1)"
run_group "FirefoxComparisonTests" --filter 'FirefoxComparisonTests'
run_group "tests that set environment variables" --filter "$environment_tests"

if [ "$fast" = 1 ]; then
  # `make test-fast`: the unit, CLI and transport tests above and the repository checks; no
  # test-bed tests, no fuzz stage, no leak check.
  check "every cited file is in the repository, no machine paths" python3 scripts/check-citations.py
  check "README's module graph matches Package.swift" python3 scripts/module-graph.py --check
  check "the embedding API matches docs/api/" python3 scripts/api-listing.py --check
  phase "done"
  [ ${#failures[@]} -eq 0 ] || printf 'failed: %s\n' "${failures[@]}"
  echo "tests: $passed passed, $failed failed"
  [ "$failed" = 0 ]
  exit
fi

mapfile -t bed_tests < <(in_bed swift test list --skip-build 2>/dev/null | grep '\.TestBedSuite/' | sort -u)
# Tests that run alone, one after the other, before the rest: they judge throughput or timing
# against a link profile (a second test's load would move their figures) or keep both cores busy
# for a minute (they would slow the other test past its deadlines).
solo_tests='linkProfileCheckMeasuresTheProfile|abRanks|abFindsNoClearBootstrapDifference|CarriesTwoHundredVerifiedStreams|fiftyConcurrentStreamsThroughSnowflake'
# Of those, these run first, before anything runs beside them: the two that load both cores, and
# the link check, which judges absolute figures against the profile (in one run with the self-check
# below beside it, and a build at nice 19, its obfs4 path's download rate went unmeasured). The
# A/B tests that follow compare two routes under the same conditions.
solo_heavy='CarriesTwoHundredVerifiedStreams|fiftyConcurrentStreamsThroughSnowflake|linkProfileCheckMeasuresTheProfile'
# One test runs beside the other solo tests, in the second bed, at nice 10: the test bed's
# self-check of its censor scenarios (2.5 minutes, nearly all of it waiting for blocked clients to
# stay blocked: 13 % of one core). At nice 10 it leaves the CPU to the solo test first, and its own
# limits are wide (a client that should get through has 30 s for the 3 s it needs). Without a
# second bed it queues with the rest.
beside_test=""
[ -z "$second_bed" ] || beside_test=$(printf '%s\n' "${bed_tests[@]}" | grep -F '/censorScenariosHoldForPlainTorClients(' || true)
# The longest of the rest start first (measured in the fresh-clone runs; the rest take under 35 s),
# so that the two queues end close together. The embedding example's test comes last: it needs the
# background build of the example to have ended.
long_tests=(censorModelsHoldForPlainTorClients censorScenariosHoldForPlainTorClients fetAtTheMeasuredRateIsReadyInEveryRun
  wholeRunSendsOnlyToItsRoute abTrialsCompareRoutesUnderBlockTor aHostileRelayDoesNotStopTheGoodOne
  connectionAssistMovesOnFromAHostileObfs4Bridge ptClientSurvivesHostileBrokers)
bed_queue="$run_dir/bed-queue"
{
  for name in "${long_tests[@]}"; do printf '%s\n' "${bed_tests[@]}" | grep -F "/$name(" || true; done
  printf '%s\n' "${bed_tests[@]}" | grep -vE "$solo_tests|embeddingExample" | grep -vF -f <(printf '/%s(\n' "${long_tests[@]}") || true
  printf '%s\n' "${bed_tests[@]}" | grep 'embeddingExample' || true
} | { if [ -n "$beside_test" ]; then grep -vxF "$beside_test" || true; else cat; fi; } >"$bed_queue"
mapfile -t solo < <(printf '%s\n' "${bed_tests[@]}" | grep -E "$solo_heavy" || true
                    printf '%s\n' "${bed_tests[@]}" | grep -E "$solo_tests" | grep -vE "$solo_heavy" || true)
queued=$(wc -l <"$bed_queue")
beside_count=0
[ -z "$beside_test" ] || beside_count=1
if [ $((queued + ${#solo[@]} + beside_count)) != "${#bed_tests[@]}" ]; then
  echo "run-tests.sh: ${#bed_tests[@]} test-bed tests listed but $((queued + ${#solo[@]} + beside_count)) scheduled" >&2
  failed=$((failed + 1)); failures+=("scheduling the test-bed tests")
fi
filter_for() { local pattern; pattern=$(printf '%s' "$1" | sed 's/[][().*+?^$|\\{}]/\\&/g'); printf '%s' "${pattern#IntegrationTests\\.}"; }
bed_results="$run_dir/bed-results"
: >"$bed_results"
run_bed_test() { # $1 = bed directory, $2 = log number, $3 = test, $4 = nice level (0); output to its log, a line to stderr
  local dir="$1" number="$2" test="$3" niceness="${4:-0}" log status start
  log=$(log_name "$number" "$test")
  start=$(date +%s)
  # NO_COLOR: the plain output `swift test` gives when not on a terminal, which tally() reads.
  if nice -n "$niceness" scripts/testbed exec --dir "$dir" env POSTERN_TESTBED_ENV="$dir/env" TMPDIR="$run_dir/tmp" \
      NO_COLOR=1 "$test_binary" --testing-library swift-testing --filter "$(filter_for "$test")" >"$log" 2>&1; then status=0; else status=1; fi
  printf '%s\t%s\t%s\n' "$status" "$log" "$test" >>"$bed_results"
  printf '== %d:%02d [%s] %s %s in %s s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$(basename "$dir")" "${test#IntegrationTests.TestBedSuite/}" \
    "$([ "$status" = 0 ] && echo passed || echo FAILED)" "$(($(date +%s) - start))" >&2
}
bed_worker() { # $1 = bed directory; takes the next test from the queue until it is empty
  local dir="$1" index test
  while :; do
    index=$( (flock 9; n=$(cat "$bed_queue.next"); if [ "$n" -ge "$queued" ]; then exit 0; fi
              echo $((n + 1)) >"$bed_queue.next"; echo $((n + 1))) 9>"$bed_queue.lock")
    [ -n "$index" ] || return 0
    test=$(sed -n "${index}p" "$bed_queue")
    if [[ "$test" == *embeddingExample* ]]; then
      echo "== waiting for the background build of Examples/EmbedNostr" >&2
      while [ ! -s "$embed_status" ] && kill -0 "$background_builds" 2>/dev/null; do sleep 2; done
      if [ "$(cat "$embed_status" 2>/dev/null)" != 0 ]; then
        tail -n 40 "$embed_log" >"$(log_name $((index + ${#solo[@]} + log_number)) "$test")" 2>&1 || true
        printf '1\t%s\t%s\n' "$(log_name $((index + ${#solo[@]} + log_number)) "$test")" "building Examples/EmbedNostr (see $embed_log)" >>"$bed_results"
        continue
      fi
    fi
    run_bed_test "$dir" $((index + ${#solo[@]} + log_number)) "$test"
  done
}
phase "${#bed_tests[@]} test-bed tests, one process each: ${#solo[@]} alone (${beside_count} beside them in the second bed), then $queued two at a time in two test beds"
beside_pid=""
start_beside() {
  [ -n "$beside_test" ] && [ -z "$beside_pid" ] || return 0
  run_bed_test "$second_bed" $((log_number + ${#solo[@]} + queued + 1)) "$beside_test" 10 &
  beside_pid=$!
}
for index in "${!solo[@]}"; do
  [[ "${solo[$index]}" =~ $solo_heavy ]] || start_beside
  run_bed_test "$tb_dir" $((index + 1 + log_number)) "${solo[$index]}"
done
start_beside
echo 0 >"$bed_queue.next"
bed_worker "$tb_dir" &
worker_a=$!
if [ -n "$second_bed" ]; then
  # The second bed joins the queue once the test beside the solo ones is done with it.
  [ -z "$beside_pid" ] || wait "$beside_pid" || true
  bed_worker "$second_bed"
fi
wait "$worker_a" || true
# The results in log order; a failed test's whole output, as the run showed it before the beds ran
# two at a time.
while IFS=$'\t' read -r status log test; do
  if [ "$status" != 0 ]; then echo "== output of the failed $test" >&2; cat "$log" >&2 || true; fi
  if [[ "$test" == building* ]]; then failed=$((failed + 1)); failures+=("$test"); continue; fi
  tally "$test" "$log" "$status"
done < <(sort -t $'\t' -k2,2 "$bed_results")

phase "test-bed tests done; waiting for the background builds and the fuzz stage"
wait "$background_builds" || true
background_builds=""
if [ -s "$fuzz_results" ]; then
  phase "fuzz stage (ran in the background): every libFuzzer target for ${FUZZ_CI_SECONDS:-25} s"
  cat "$fuzz_stage_log" | tee "$run_dir/logs/fuzz.log"
else
  phase "fuzz stage: every libFuzzer target for ${FUZZ_CI_SECONDS:-25} s"
  fuzz_build=()
  grep -q '^== fuzz build took' "$fuzz_build_log" 2>/dev/null && fuzz_build=(--skip-build)  # built in the background
  scripts/fuzz.sh --seconds "${FUZZ_CI_SECONDS:-25}" "${fuzz_build[@]}" --results "$fuzz_results" 2>&1 | tee "$run_dir/logs/fuzz.log" || true
fi
fuzz_passed=$(grep -c '^PASS ' "$fuzz_results" 2>/dev/null || true)
fuzz_failed=$(grep -c '^FAIL ' "$fuzz_results" 2>/dev/null || true)
passed=$((passed + ${fuzz_passed:-0}))
if [ "${fuzz_passed:-0}" = 0 ] && [ "${fuzz_failed:-0}" = 0 ]; then fuzz_failed=1; fi  # the stage itself broke
failed=$((failed + ${fuzz_failed:-0}))
while read -r result target; do [ "$result" = FAIL ] && failures+=("fuzz: $target"); done < <(cat "$fuzz_results" 2>/dev/null || echo "FAIL build")

# The stage can fail: a target whose every input breaks an invariant must be reported as failed.
check "fuzz stage fails on a crash" bash -c '! POSTERN_FUZZ_PLANTED_CRASH=1 FUZZ_ARTIFACTS="$1" scripts/fuzz.sh --seconds 5 KCPFuzzer' _ "$run_dir/fuzz-self-test"

phase "hygiene: bridge secrets in the run's outputs and files"
kill "$keeper" 2>/dev/null || true
wait "$keeper" 2>/dev/null || true
check "leak check self-test" python3 scripts/check-leaks.py --self-test
check "citations self-test" python3 scripts/check-citations.py --self-test
check "every cited file is in the repository, no machine paths" python3 scripts/check-citations.py
check "README's module graph matches Package.swift" python3 scripts/module-graph.py --check
check "the embedding API matches docs/api/" python3 scripts/api-listing.py --check
check "test bed link model self-test" python3 scripts/testbed-link.py self-test
check "test bed fet censor rules self-test" python3 scripts/testbed-censor.py self-test
check "test bed fingerprint censor self-test" python3 scripts/testbed-censor.py fingerprint-self-test
# The two beds' secrets are looked for at once, one scan per core (each reads every output and
# kept file: about 40 s apiece).
second_leak_log="$run_dir/logs/check-no_bridge_secrets_of_the_second_test_bed_in_outputs_or_files.log"
second_leaks=""
if [ -n "$second_bed" ]; then
  python3 scripts/check-leaks.py --env "$second_bed/env" "$run_dir/logs" "$run_dir/tmp" "$run_dir/kept" >"$second_leak_log" 2>&1 &
  second_leaks=$!
fi
check "no bridge secrets in outputs or files" python3 scripts/check-leaks.py --env "$tb_dir/env" "$run_dir/logs" "$run_dir/tmp" "$run_dir/kept"
if [ -n "$second_leaks" ]; then
  if wait "$second_leaks"; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("no bridge secrets of the second test bed in outputs or files"); fi
  cat "$second_leak_log"
fi

phase "done"
echo
if [ ${#failures[@]} -gt 0 ]; then
  printf 'failed: %s\n' "${failures[@]}"
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" = 0 ]
