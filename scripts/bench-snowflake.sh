#!/usr/bin/env bash
# `make bench`'s snowflake part: our snowflake client vs Debian's snowflake-client on one test-bed
# stack, in one run (postern-bench snowflake; see Benchmarks/postern-bench/SnowflakeBenchmark.swift).
# Brings up a private test bed in .testbed/bench (censor none), runs the benchmark inside its
# namespace and always takes it down. Extra arguments go to postern-bench.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source "$(dirname "${BASH_SOURCE[0]}")/swift-env.sh"  # swift on PATH, the tor core on PKG_CONFIG_PATH
swift build -c release --static-swift-stdlib --product postern-bench
bench=$(swift build -c release --show-bin-path)/postern-bench
dir="$PWD/.testbed/bench"
scripts/testbed down --dir "$dir" >/dev/null 2>&1 || true
trap 'scripts/testbed down --dir "$dir" >/dev/null 2>&1 || true' EXIT
scripts/testbed up --dir "$dir" --censor none
scripts/testbed exec --dir "$dir" "$bench" snowflake "$@"
