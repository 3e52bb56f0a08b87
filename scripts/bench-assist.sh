#!/usr/bin/env bash
# `make bench`'s connection assist part (issue 14): time to ready under the censor scenarios none,
# block-tor and block-tor-and-bridges for the race strategy, the sequential one and the working
# route alone (the oracle), in one run (postern-bench assist; see
# Benchmarks/postern-bench/AssistBenchmark.swift); then issue 22's censors fet (P = 100 %),
# freeze and burst with time to ready and time to verdict (the first diagnosis of the route the
# censor blocks) and the connections the censor blocked. Brings up a private test bed in
# .testbed/bench-assist and always takes it down.
#
# Arguments go to `postern-bench assist` (`--only fet,freeze` runs just those censors).
# POSTERN_BENCH_CONFIG=debug measures a debug build (release by default; the figures in the docs
# are a release build's unless they say otherwise).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source "$(dirname "${BASH_SOURCE[0]}")/swift-env.sh"  # swift on PATH, the tor core on PKG_CONFIG_PATH
config="${POSTERN_BENCH_CONFIG:-release}"
[[ "$config" == release || "$config" == debug ]] || { echo "POSTERN_BENCH_CONFIG is release or debug, not '$config'" >&2; exit 64; }
swift build -c "$config" --product postern-bench
swift build -c "$config" --product postern
bin=$(swift build -c "$config" --show-bin-path)
dir="$PWD/.testbed/bench-assist"
scripts/testbed down --dir "$dir" >/dev/null 2>&1 || true
trap 'scripts/testbed down --dir "$dir" >/dev/null 2>&1 || true' EXIT
scripts/testbed up --dir "$dir" --censor none
scripts/testbed exec --dir "$dir" env POSTERN_BIN="$bin/postern" POSTERN_TESTBED_SCRIPT="$PWD/scripts/testbed" "$bin/postern-bench" assist "$@"
