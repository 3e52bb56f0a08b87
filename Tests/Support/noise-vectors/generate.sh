#!/usr/bin/env bash
# Regenerates Tests/CryptoTests/Vectors/noise-nk-flynn.json with flynn/noise, offline, from Debian's Go
# packages in GOPATH mode (scripts/install-deps.sh installs golang-go and golang-github-flynn-noise-dev).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
command -v go >/dev/null || { echo "generate.sh: go is missing (apt-get install golang-go)" >&2; exit 1; }
[[ -d /usr/share/gocode/src/github.com/flynn/noise ]] \
  || { echo "generate.sh: flynn/noise is missing (apt-get install golang-github-flynn-noise-dev)" >&2; exit 1; }
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
GOPATH=/usr/share/gocode GO111MODULE=off GOPROXY=off GOFLAGS="" GOCACHE="$cache" GOTOOLCHAIN=local \
  go run "$here/main.go" > "$root/Tests/CryptoTests/Vectors/noise-nk-flynn.json.tmp"
mv "$root/Tests/CryptoTests/Vectors/noise-nk-flynn.json.tmp" "$root/Tests/CryptoTests/Vectors/noise-nk-flynn.json"
