#!/usr/bin/env bash
# Builds the test bed's snowflake broker, server, AMP cache and vector tool OFFLINE with Debian's Go toolchain
# against Debian's Go packages (golang-snowflake-dev, golang-github-xtaci-kcp-dev,
# golang-github-xtaci-smux-dev, golang-github-gorilla-websocket-dev) in GOPATH mode.
#
#   build.sh OUTDIR [broker server ampcache vectors]
#
# Debian installs some modules without their major-version suffix (snowflake under .../snowflake.git,
# kcp-go under .../kcp-go, pion/webrtc...), but code imports them by module path (.../snowflake.git/v2,
# github.com/xtaci/kcp-go/v5). GOPATH mode does not map those, so a small GOPATH in OUTDIR links
# each /vN path to Debian's tree and comes first in GOPATH.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out="${1:?usage: build.sh OUTDIR [TOOL...]}"; shift
tools=("$@")
((${#tools[@]})) || tools=(broker server)
gocode=/usr/share/gocode/src
command -v go >/dev/null || { echo "build.sh: go is missing (apt-get install golang-go)" >&2; exit 1; }
for dir in "$gocode/git.torproject.org/pluggable-transports/snowflake.git" "$gocode/github.com/xtaci/kcp-go" \
    "$gocode/github.com/xtaci/smux" "$gocode/github.com/gorilla/websocket"; do
  [[ -d "$dir" ]] || { echo "build.sh: $dir is missing (apt-get install golang-snowflake-dev)" >&2; exit 1; }
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
export GOPATH="$out/gopath:/usr/share/gocode" GO111MODULE=off GOPROXY=off GOFLAGS="" \
  GOCACHE="$out/gocache" GOTOOLCHAIN=local
for tool in "${tools[@]}"; do
  [[ -f "$here/$tool/main.go" ]] || { echo "build.sh: unknown tool $tool" >&2; exit 64; }
  # Rebuild only when a source is newer than the binary.
  if [[ -x "$out/snowflake-test-$tool" && -z "$(find "$here/$tool" -newer "$out/snowflake-test-$tool" -name '*.go')" ]]; then
    continue
  fi
  # A private temporary name: two test beds may build into the same OUTDIR at once.
  (cd "$here/$tool" && go build -trimpath -o "$out/snowflake-test-$tool.tmp.$$" main.go)
  mv -f "$out/snowflake-test-$tool.tmp.$$" "$out/snowflake-test-$tool"
done
