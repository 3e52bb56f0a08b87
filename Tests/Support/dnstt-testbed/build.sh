#!/usr/bin/env bash
# Builds the test bed's dnstt server stand-in, client double and vector tool OFFLINE with Debian's Go
# toolchain against Debian's Go packages (golang-github-xtaci-kcp-dev, golang-github-xtaci-smux-dev,
# golang-github-flynn-noise-dev, golang-github-miekg-dns-dev, golang-golang-x-net-dev and
# golang-snowflake-dev for turbotunnel.QueuePacketConn) in GOPATH mode.
#
#   build.sh OUTDIR [server client vectors]     (default: server client)
#
# Binaries: OUTDIR/dnstt-test-TOOL. As in snowflake-testbed/build.sh, Debian installs some modules
# without their major-version suffix (kcp-go under .../kcp-go, snowflake under .../snowflake.git)
# while code imports them by module path (github.com/xtaci/kcp-go/v5, .../snowflake.git/v2), so a
# small GOPATH in OUTDIR links each /vN path to Debian's tree. It also links our shared package
# (dnsttbed/, the dnstt wire codec) as the import path "dnsttbed".
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out="${1:?usage: build.sh OUTDIR [TOOL...]}"; shift
tools=("$@")
((${#tools[@]})) || tools=(server client)
gocode=/usr/share/gocode/src
command -v go >/dev/null || { echo "build.sh: go is missing (apt-get install golang-go)" >&2; exit 1; }
for dir in "$gocode/git.torproject.org/pluggable-transports/snowflake.git:golang-snowflake-dev" \
    "$gocode/github.com/xtaci/kcp-go:golang-github-xtaci-kcp-dev" "$gocode/github.com/xtaci/smux:golang-github-xtaci-smux-dev" \
    "$gocode/github.com/flynn/noise:golang-github-flynn-noise-dev" "$gocode/github.com/miekg/dns:golang-github-miekg-dns-dev" \
    "$gocode/golang.org/x/net/http2:golang-golang-x-net-dev"; do
  [[ -d "${dir%%:*}" ]] || { echo "build.sh: ${dir%%:*} is missing (apt-get install ${dir##*:})" >&2; exit 1; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
links="$out/gopath/src"
# Every Debian tree whose go.mod names a /vN module path that differs from its directory.
while IFS= read -r gomod; do
  dir=${gomod#"$gocode/"}; dir=${dir%/go.mod}
  module=$(awk '/^module / { gsub(/"/, "", $2); print $2; exit }' "$gomod")
  [[ "$module" == "$dir/v"[0-9]* ]] || continue
  mkdir -p "$links/$dir"
  ln -sfn "$gocode/$dir" "$links/$module"
done < <(find "$gocode" -name go.mod -not -path '*/testdata/*' -not -path '*/vendor/*')
ln -sfn "$here/dnsttbed" "$links/dnsttbed"
export GOPATH="$out/gopath:/usr/share/gocode" GO111MODULE=off GOPROXY=off GOFLAGS="" \
  GOCACHE="$out/gocache" GOTOOLCHAIN=local
for tool in "${tools[@]}"; do
  [[ -f "$here/$tool/main.go" ]] || { echo "build.sh: unknown tool $tool" >&2; exit 64; }
  # Rebuild only when a source (the tool's or the shared package's) is newer than the binary.
  if [[ -x "$out/dnstt-test-$tool" && -z "$(find "$here/$tool" "$here/dnsttbed" -newer "$out/dnstt-test-$tool" -name '*.go')" ]]; then
    continue
  fi
  # A private temporary name: two test beds may build into the same OUTDIR at once.
  (cd "$here/$tool" && go build -trimpath -o "$out/dnstt-test-$tool.tmp.$$" main.go)
  mv -f "$out/dnstt-test-$tool.tmp.$$" "$out/dnstt-test-$tool"
done
