#!/usr/bin/env bash
# Installs the Debian packages Postern needs to build, test and demo (idempotent), then the pinned
# tor core. Swift itself (6.x at /opt/swift or on PATH) is expected to be present.
set -euo pipefail
PACKAGES=(
  # build
  gcc make patch pkg-config dpkg-dev libevent-dev libssl-dev zlib1g-dev libzstd-dev liblzma-dev libsodium-dev
  # fuzzing (scripts/fuzz.sh): -sanitize=fuzzer links the toolchain's libFuzzer, which is C++ and
  # needs libstdc++ at link time (swift.org lists it for Debian 12 too; named here so it is certain)
  libstdc++-12-dev
  # app layer: HTTP/WebSocket through SOCKS, Nostr signatures
  libcurl4-openssl-dev libsecp256k1-dev
  # snowflake's WebRTC data channel: ICE and SCTP (DTLS uses libssl-dev above)
  libnice-dev libusrsctp-dev
  # browser-shaped TLS for the transports (TransportTLS): NSS, Firefox's TLS library
  libnss3-dev
  # HTTP/2 when a server picks h2 (the broker, AMP cache, DNS over HTTPS): TransportWire/HTTP2Connection
  libnghttp2-dev
  # bridges export --format qr, and its test (decode with zbarimg)
  libqrencode-dev qrencode zbar-tools
  # obfs4 through an upstream SOCKS5 proxy (TOR_PT_PROXY) test
  microsocks
  # test bed: real peers and the censor
  tor obfs4proxy nftables iproute2 curl python3 python3-pip procps psmisc
  # test bed: snowflake stack (proxies, STUN, reference client; Go sources for our broker/server)
  snowflake-proxy snowflake-client coturn golang-go golang-snowflake-dev openssl
  # test bed: webtunnel (the web server in front of our webtunnel server stand-in)
  nginx
  # test bed: dnstt (issue #23): a real recursive resolver answering UDP, DoT and DoH (HTTP/2) in
  # front of our dnstt server stand-in, the Go libraries of that stand-in (Tests/Support/dnstt-testbed;
  # flynn/noise is listed below; golang-snowflake-dev above pulls kcp-go, smux and x/net in too, named
  # here so the build does not rest on that), and dig (9.18: +tls, +https) for the shutdown check
  unbound golang-github-miekg-dns-dev golang-github-xtaci-kcp-dev golang-github-xtaci-smux-dev
  golang-golang-x-net-dev bind9-dnsutils
  # Noise NK vectors from an independent implementation (Tests/Support/noise-vectors/generate.sh
  # regenerates Tests/CryptoTests/Vectors/noise-nk-flynn.json; the unit tests read the checked-in file)
  golang-github-flynn-noise-dev
  # HTTP/2 tests: nginx answers a POST with its body (TransportTLSTests/NginxHTTP2Server)
  libnginx-mod-http-echo
  # app layer leak proof: packet capture inside the namespace
  tshark
  # A/B results: the report's charts rendered by a real SVG renderer and their pixels read back,
  # and the OONI measurements validated against their JSON schema (Tests/PosternTrialsTests)
  librsvg2-bin python3-pil python3-jsonschema
  # ground truth for handshakes: a real browser's ClientHello (Tests/TransportTLSTests, headless)
  firefox-esr
)
missing=()
for p in "${PACKAGES[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  sudo_() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
  sudo_ apt-get update -qq
  sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian starts a system tor service on install where an init system runs; our test bed runs its
# own tor processes, so a system tor only wastes resources.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet tor 2>/dev/null; then
  systemctl stop tor || true
fi
# Likewise coturn and nginx: the test bed runs its own STUN-only turnserver and web server in the
# namespace.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet nginx 2>/dev/null; then
  systemctl stop nginx || true
fi
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet coturn 2>/dev/null; then
  systemctl stop coturn || true
fi
# unbound too, and for good: Debian's unbound.service takes 127.0.0.1:53 on the host, and
# unbound-resolvconf.service points the host's resolv.conf at it. The test bed runs its own unbound
# on 198.51.100.53 inside the namespace.
if command -v systemctl >/dev/null 2>&1; then
  for unit in unbound-resolvconf unbound; do
    if systemctl is-active --quiet "$unit" 2>/dev/null; then systemctl stop "$unit" || true; fi
    if systemctl is-enabled --quiet "$unit" 2>/dev/null; then systemctl disable --quiet "$unit" || true; fi
  done
fi
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
command -v swift >/dev/null || { echo "install-deps: swift not found (expected on PATH or at /opt/swift)" >&2; exit 1; }
# scripts/run-tests.sh builds the tor core itself, while its test beds come up (POSTERN_DEPS_WITHOUT_TOR_CORE=1).
[ "${POSTERN_DEPS_WITHOUT_TOR_CORE:-0}" = 1 ] || "$(dirname "${BASH_SOURCE[0]}")/build-tor-core.sh"
