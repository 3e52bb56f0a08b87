#!/usr/bin/env bash
# `make bench`: every benchmark against its peer, in one run, then the headline ratios together.
#   1. obfs4: our client vs obfs4proxy's on loopback (throughput, CPU per 100 MB both ways, the
#      cipher alone on the same bytes, handshakes);
#   2. TLS handshakes: TransportTLS (NSS; firefox-esr and randomized-alpn hellos) vs OpenSSL's
#      client with its default hello, against the same openssl s_server on loopback;
#   3. in one private test bed (censor none; brought up here and always taken down):
#      memory: `postern run` RSS after bootstrap and a page through the bed's obfs4, snowflake,
#      dnstt (UDP) and dnstt (DoH) lines, each vs Debian's tor through the same line with its
#      client: obfs4proxy, snowflake-client, and for dnstt (no Debian client) the bed's Go client
#      double (a stand-in of ours) forwarding a port tor uses as its bridge; one RESULT line each;
#      snowflake: our client vs snowflake-client;
#      webtunnel: our client's dials (TLS and upgrade through the bed's nginx) and tor through it.
#      Debian has no webtunnel client, so its peer is POSTERN_BASELINE when set (another build's
#      postern binary, e.g. an earlier commit's, measured interleaved); without it, figures only.
#      dnstt: `postern run` through the bed's dnstt lines over UDP, DoT and DoH to its unbound:
#      bootstrap, first byte, a download, and the resolver link's bytes per payload byte (kernel
#      counters). No Debian dnstt client either: POSTERN_BASELINE again, or figures only.
# The machine may be shared: every figure is a ratio against the peer measured in the same run.
# Extra arguments go to the snowflake benchmark.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source "$(dirname "${BASH_SOURCE[0]}")/swift-env.sh"  # swift on PATH, the tor core on PKG_CONFIG_PATH
build=(swift build -c release --static-swift-stdlib)
"${build[@]}" --product postern
"${build[@]}" --product postern-bench
bin=$(swift build -c release --show-bin-path)
# stdbuf: line-buffered output, so progress shows through tee as it happens.
bench=(stdbuf -oL "$bin/postern-bench")
out=$(mktemp /tmp/postern-bench.XXXXXX)
dir="$PWD/.testbed/bench"
cleanup() { scripts/testbed down --dir "$dir" >/dev/null 2>&1 || true; rm -f "$out"; }
trap cleanup EXIT
"${bench[@]}" obfs4 | tee -a "$out"
echo
"${bench[@]}" tls | tee -a "$out"
echo
scripts/testbed down --dir "$dir" >/dev/null 2>&1 || true
scripts/testbed up --dir "$dir" --censor none
# Bounded so that the rest of the run still reports if the memory step ever stalls (it hung before
# its fix: the stock tor, started from a dispatch thread, had SIGTERM blocked; docs/PERFORMANCE.md).
# Four routes, eight bootstraps (each waited for up to 180 s): 1500 s. A route that fails prints its
# own RESULT line and the others still run; this line only when the whole step was cut off.
status=0
timeout --signal=KILL 1500 scripts/testbed exec --dir "$dir" env POSTERN_BINARY="$bin/postern" "${bench[@]}" memory \
  | tee -a "$out" || status=$?
if ((status == 137)); then
  echo "RESULT memory: did not finish within 1500 s (no ratio for the routes not printed above)" | tee -a "$out"
fi
echo
scripts/testbed exec --dir "$dir" "${bench[@]}" snowflake "$@" | tee -a "$out"
echo
scripts/testbed exec --dir "$dir" env POSTERN_BINARY="$bin/postern" POSTERN_BASELINE="${POSTERN_BASELINE:-}" \
  "${bench[@]}" webtunnel | tee -a "$out"
echo
# Its own RESULT lines say which transport failed; this one only if the whole step did not run.
if ! scripts/testbed exec --dir "$dir" env POSTERN_BINARY="$bin/postern" POSTERN_BASELINE="${POSTERN_BASELINE:-}" \
  "${bench[@]}" dnstt | tee -a "$out"; then
  echo "RESULT dnstt: the benchmark exited with an error (no figures in this run)" | tee -a "$out"
fi
echo
echo "== summary (ratios against the peer in this run)"
grep '^RESULT' "$out"
