#!/usr/bin/env bash
# Instructions per TLS handshake of one postern-bench tls client, counted by valgrind (callgrind):
# unlike CPU time, an instruction count does not move with the machine's load, so a change to the
# handshake path can be measured to a fraction of a percent on a shared machine
# (docs/PERFORMANCE.md, "Instructions per handshake").
#
#   scripts/tls-instructions.sh [CLIENT] [N1] [N2]     CLIENT: firefox-esr (default), randomized-alpn,
#                                                      randomized-noalpn, openssl
#
# Runs the release postern-bench twice under callgrind, N1 and N2 handshakes against one
# `openssl s_server` on 127.0.0.1 (a P-256 test CA and leaf made here, as TestCertificates makes
# them), and prints (Ir(N2) - Ir(N1)) / (N2 - N1): the process's instructions per handshake, all
# threads, start-up and the first handshake cancelled out; the server's are not counted (another
# process). Leaves the callgrind files in $OUT (default: a temporary directory) for callgrind_annotate.
#
# Two work-arounds for valgrind 3.19 (Debian 12): Swift's DWARF 5 debug info stops its reader, so a
# copy stripped of debug info (symbols kept) runs; and valgrind writes into the signal mask passed to
# sigsuspend, which libdispatch keeps in read-only memory, so a preloaded sigsuspend passes a copy.
# The process cannot start the openssl server itself under valgrind (the spawn fails), hence the
# server here (POSTERN_BENCH_TLS_PORT, POSTERN_BENCH_TLS_CA).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
client=${1:-firefox-esr}
n1=${2:-5}
n2=${3:-45}
source scripts/swift-env.sh
bin=$(swift build -c release --show-bin-path)/postern-bench
[ -x "$bin" ] || { echo "build it first: swift build -c release --product postern-bench" >&2; exit 1; }
work=$(mktemp -d /tmp/postern-tls-instructions.XXXXXX)
out=${OUT:-$work}
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -f "$work"/*.key "$work"/*.csr; }
trap cleanup EXIT

strip --strip-debug -o "$work/postern-bench" "$bin"
cat >"$work/sigsuspend.c" <<'C'
#define _GNU_SOURCE
#include <signal.h>
#include <unistd.h>
#include <sys/syscall.h>
int sigsuspend(const sigset_t *mask) { sigset_t copy = *mask; return (int)syscall(SYS_rt_sigsuspend, &copy, 8); }
C
cc -O2 -shared -fPIC -o "$work/sigsuspend.so" "$work/sigsuspend.c"

ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
printf 'subjectAltName=DNS:postern.test,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' >"$work/leaf.ext"
openssl req -x509 "${ec[@]}" -days 2 -subj "/CN=Postern Test CA $$" -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -new "${ec[@]}" -subj /CN=postern.test -keyout "$work/leaf.key" -out "$work/leaf.csr" 2>/dev/null
openssl x509 -req -in "$work/leaf.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -set_serial $RANDOM$RANDOM -days 1 \
  -extfile "$work/leaf.ext" -out "$work/leaf.pem" 2>/dev/null
port=$((20000 + RANDOM % 20000))
openssl s_server -accept "127.0.0.1:$port" -cert "$work/leaf.pem" -key "$work/leaf.key" -ign_eof -www -alpn h2,http/1.1 \
  >"$work/server.log" 2>&1 </dev/null &
server=$!
for _ in $(seq 50); do grep -q ACCEPT "$work/server.log" 2>/dev/null && break; sleep 0.1; done

count() {
  LD_PRELOAD="$work/sigsuspend.so" POSTERN_BENCH_TLS_PORT=$port POSTERN_BENCH_TLS_CA="$work/ca.pem" \
    valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.$client.$1" \
    "$work/postern-bench" tls --only "$client" --handshakes "$1" --rounds 1 2>&1 | grep -v '^###' >"$out/valgrind.$client.$1.log"
  grep -q '^RESULT' "$out/valgrind.$client.$1.log" || { echo "the run of $1 handshakes failed: $out/valgrind.$client.$1.log" >&2; exit 1; }
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/valgrind.$client.$1.log"
}
i1=$(count "$n1")
i2=$(count "$n2")
echo "RESULT tls instructions $client: $(( (i2 - i1) / (n2 - n1) )) per handshake ($n1 handshakes: $i1, $n2: $i2; callgrind files in $out)"
