#!/usr/bin/env bash
# `make bench`'s connection assist part (issue 14): time to ready under the censor scenarios none,
# block-tor and block-tor-and-bridges for the race strategy, the sequential one and the working
# route alone (the oracle), in one run (postern-bench assist; see
# Benchmarks/postern-bench/AssistBenchmark.swift). Brings up a private test bed in
# .testbed/bench-assist and always takes it down.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source "$(dirname "${BASH_SOURCE[0]}")/swift-env.sh"  # swift on PATH, the tor core on PKG_CONFIG_PATH
swift build -c release --product postern-bench
swift build -c release --product postern
bin=$(swift build -c release --show-bin-path)
dir="$PWD/.testbed/bench-assist"
scripts/testbed down --dir "$dir" >/dev/null 2>&1 || true
trap 'scripts/testbed down --dir "$dir" >/dev/null 2>&1 || true' EXIT
scripts/testbed up --dir "$dir" --censor none
scripts/testbed exec --dir "$dir" env POSTERN_BIN="$bin/postern" POSTERN_TESTBED_SCRIPT="$PWD/scripts/testbed" "$bin/postern-bench" assist "$@"
