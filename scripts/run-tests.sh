#!/usr/bin/env bash
# The whole test run: dependencies, build, one shared test bed for all tests, then teardown.
# The tests run inside the test bed's network namespace, where the only network is loopback.
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
echo "== running the tests" >&2
POSTERN_TESTBED_ENV="$tb_dir/env" scripts/testbed exec --dir "$tb_dir" swift test --skip-build "$@"
