#!/usr/bin/env bash
# The whole test run: dependencies, build, one shared test bed for all tests, then teardown.
# The tests run inside the test bed's network namespace, where the only network is loopback.
#
# Tests that run an in-process tor (TestBedSuite) get a process each: tor_api allows one core at a
# time, tor keeps some state from run to run (docs/TOR-CORE-PROVENANCE.md), and one process per
# test keeps each test's result its own. Everything else runs in one process.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
scripts/install-deps.sh
scripts/install-test-peers.sh
echo "== building" >&2
swift build --build-tests
tb_dir="$PWD/.testbed/test"
scripts/testbed down --dir "$tb_dir" >/dev/null 2>&1 || true
trap 'scripts/testbed down --dir "$tb_dir" || true' EXIT
echo "== starting the test bed" >&2
scripts/testbed up --dir "$tb_dir" --censor none
export POSTERN_TESTBED_ENV="$tb_dir/env"
in_bed() { scripts/testbed exec --dir "$tb_dir" "$@"; }

passed=0 failed=0
failures=()
run_group() { # $1 = label, rest = swift test arguments
  local label="$1"; shift
  local log
  log=$(mktemp)
  if in_bed swift test --skip-build "$@" 2>&1 | tee "$log"; then status=0; else status=1; fi
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
  rm -f "$log"
}

echo "== unit, CLI and transport tests (one process)" >&2
run_group "all but TestBedSuite" --skip '\.TestBedSuite/'

mapfile -t bed_tests < <(in_bed swift test list --skip-build 2>/dev/null | grep '\.TestBedSuite/' | sort -u)
echo "== ${#bed_tests[@]} test-bed tests, one process each" >&2
for test in "${bed_tests[@]}"; do
  pattern=$(printf '%s' "$test" | sed 's/[][().*+?^$|\\{}]/\\&/g')
  run_group "$test" --filter "${pattern#IntegrationTests\\.}"
done

echo
if [ ${#failures[@]} -gt 0 ]; then
  printf 'failed: %s\n' "${failures[@]}"
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" = 0 ]
