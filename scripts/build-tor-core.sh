#!/usr/bin/env bash
# Builds the embedded tor core (libtor.a + tor_api.h + a pkg-config file) from Debian's source
# package, after checking the upstream tarball against the pinned SHA-256. Idempotent: a second run
# with the same pins does nothing. See docs/TOR-CORE-PROVENANCE.md; version, hash and flags change
# together in one commit.
#
#   scripts/build-tor-core.sh                 fetch (apt-get source), verify, build, install
#   scripts/build-tor-core.sh --tarball FILE  verify and build FILE instead of fetching
#   scripts/build-tor-core.sh --verify-only FILE   only check FILE's hash (exit 1 on mismatch)
#   scripts/build-tor-core.sh --pkg-config-only    only (re)write the prefix's pkg-config files
#   --prefix DIR   install prefix (default: <repo>/.deps/tor)
# Package.swift finds the core through pkg-config: put DIR/lib/pkgconfig on PKG_CONFIG_PATH (the
# Makefile and scripts/swift-env.sh do; a package that depends on Postern: docs/TOR-CORE-PROVENANCE.md).
set -euo pipefail

TOR_VERSION="0.4.9.11"
TOR_ORIG_SHA256="2e6c1720118c812acf0079fd47cf91b6bfaba5d766c321c4d3d2a28d6a11a8ed"
CONFIGURE_FLAGS=(
  --disable-asciidoc --disable-manpage --disable-html-manual --disable-unittests
  --disable-module-relay --disable-module-dirauth --enable-pic --disable-tool-name-check
  --disable-system-torrc
  # Pinned so that the link line does not depend on which optional -dev packages happen to be
  # installed on the building machine.
  --disable-seccomp --disable-libscrypt --disable-systemd
)
LINK_LIBS="-ltor -levent -lssl -lcrypto -lz -lzstd -llzma -lm"
BUILD_DEPS=(gcc make patch pkg-config dpkg-dev libevent-dev libssl-dev zlib1g-dev libzstd-dev liblzma-dev
  # not for tor: the C libraries Package.swift's other system modules name, so that this one command
  # readies a machine to build Postern (or a package that depends on it)
  libsodium-dev libsecp256k1-dev libcurl4-openssl-dev libnice-dev libusrsctp-dev libqrencode-dev)

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix="$repo_root/.deps/tor"
work="$repo_root/.deps/tor-build"
tarball=""
verify_only=0
pkg_config_only=0

die() { echo "build-tor-core: error: $*" >&2; exit 1; }
say() { echo "build-tor-core: $*" >&2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --tarball) tarball="${2:?--tarball needs a file}"; shift 2 ;;
    --verify-only) tarball="${2:?--verify-only needs a file}"; verify_only=1; shift 2 ;;
    --pkg-config-only) pkg_config_only=1; shift ;;
    --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-tor-core: unknown option '$1' (see --help)" >&2; exit 64 ;;
  esac
done

verify() { # $1 = tarball path
  local actual
  [ -f "$1" ] || die "tarball '$1' does not exist"
  actual=$(sha256sum "$1" | cut -d' ' -f1)
  if [ "$actual" != "$TOR_ORIG_SHA256" ]; then
    die "SHA-256 mismatch for $(basename "$1"): expected $TOR_ORIG_SHA256, got $actual. Refusing to build."
  fi
  say "verified $(basename "$1") sha256=$actual"
}

if [ "$verify_only" = 1 ]; then verify "$tarball"; exit 0; fi

# The pkg-config files Package.swift's system modules name (SwiftPM refuses a dependency whose
# targets pass -L or -I as unsafe flags, so these are the only way in). Written on every run, also
# into a prefix built before they existed; each is replaced atomically and only when it changes.
#  - tor-embedded.pc: the core's include and library directories, relative to the file
#    (${pcfiledir}), so a prefix still works when moved or reached through a symlink. The -l flags
#    are CTor's module map's (autolinked; see there why not here), checked against LINK_LIBS.
#  - postern-nice.pc: libnice's and GLib's include directories only. libnice's own nice.pc adds
#    -pthread, which SwiftPM does not allow and warns about on every build, and its libraries, which
#    Postern does not link (CSnowflakeLibraries opens them with dlopen).
write_if_changed() { # $1 = file; content on stdin
  local tmp="$1.tmp.$$"
  cat > "$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv -f "$tmp" "$1"; fi
}
write_pkg_config() { # $1 = prefix
  local nice_cflags nice_version
  command -v pkg-config >/dev/null || die "pkg-config is not installed (apt-get install pkg-config)"
  nice_cflags=$(pkg-config --cflags-only-I nice 2>/dev/null | sed 's/ *$//') || die "libnice's pkg-config file is missing (apt-get install libnice-dev)"
  nice_version=$(pkg-config --modversion nice)
  local module_links
  module_links=$(sed -n 's/^ *link "\(.*\)"$/-l\1/p' "$repo_root/Sources/CTor/module.modulemap" | paste -sd' ')
  [ "$module_links" = "$LINK_LIBS" ] || die "Sources/CTor/module.modulemap links '$module_links', LINK_LIBS is '$LINK_LIBS': change them together"
  mkdir -p "$1/lib/pkgconfig"
  write_if_changed "$1/lib/pkgconfig/tor-embedded.pc" <<PC
prefix=\${pcfiledir}/../..
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: tor-embedded
Description: Tor $TOR_VERSION client core as a static library (Postern)
Version: $TOR_VERSION
Cflags: -I\${includedir}
Libs: -L\${libdir}
PC
  write_if_changed "$1/lib/pkgconfig/postern-nice.pc" <<PC
Name: postern-nice
Description: libnice $nice_version and GLib headers for Postern's snowflake transport (nothing linked: dlopened)
Version: $nice_version
Cflags: $nice_cflags
Libs:
PC
}
if [ "$pkg_config_only" = 1 ]; then
  [ -f "$prefix/lib/libtor.a" ] || die "no tor core in $prefix (run scripts/build-tor-core.sh without --pkg-config-only)"
  write_pkg_config "$prefix"; exit 0
fi

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for p in "${BUILD_DEPS[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing build dependencies: ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Postern's own fixes to the pinned source, applied in order after verification (see
# docs/TOR-CORE-PROVENANCE.md). Their content is part of the build's identity.
patches=("$repo_root"/patches/tor/*.patch)
[ -e "${patches[0]}" ] || patches=()
patches_id=$(cat /dev/null "${patches[@]}" | sha256sum | cut -d' ' -f1)
flags_id=$(printf '%s\n' "$TOR_VERSION" "$TOR_ORIG_SHA256" "${CONFIGURE_FLAGS[@]}" "$LINK_LIBS" "$patches_id" | sha256sum | cut -d' ' -f1)
stamp="$prefix/.postern-stamp"
if [ -z "$tarball" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$flags_id" ] && [ -f "$prefix/lib/libtor.a" ]; then
  write_pkg_config "$prefix"
  say "tor core $TOR_VERSION already built in $prefix (nothing to do)"
  exit 0
fi

mkdir -p "$work"
if [ -z "$tarball" ]; then
  # apt-get source needs deb-src entries; derive them from the machine's own deb entries.
  if ! grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    say "adding deb-src entries mirroring the configured deb entries"
    tmp_src=$(mktemp)
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] || continue
      sed -n '/^Types:/,$p' "$f" | sed 's/^Types: deb$/Types: deb-src/' >> "$tmp_src"; echo >> "$tmp_src"
    done
    as_root install -m 0644 "$tmp_src" /etc/apt/sources.list.d/postern-deb-src.sources; rm -f "$tmp_src"
    if [ -f /etc/apt/sources.list ] && grep -qE '^deb ' /etc/apt/sources.list; then
      grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' | as_root tee /etc/apt/sources.list.d/postern-deb-src.list >/dev/null
    fi
    as_root apt-get update -qq
  fi
  tarball="$work/tor_${TOR_VERSION}.orig.tar.gz"
  if [ ! -f "$tarball" ]; then
    served=$(apt-cache showsrc tor 2>/dev/null | sed -n 's/^Version: //p' | sort -u | tr '\n' ' ')
    (cd "$work" && apt-get source --download-only tor >/dev/null 2>&1) || true
    [ -f "$tarball" ] || die "pinned tor $TOR_VERSION is not served as a Debian source package; served: ${served:-nothing (check deb-src entries)}. Update version, hash and flags together (docs/TOR-CORE-PROVENANCE.md)."
  fi
fi

verify "$tarball"

src="$work/tor-$TOR_VERSION"
rm -rf "$src"
tar -xzf "$tarball" -C "$work"
[ -d "$src" ] || die "tarball did not contain tor-$TOR_VERSION/"
for patch in "${patches[@]}"; do
  say "applying $(basename "$patch")"
  patch -d "$src" -p1 --quiet --forward < "$patch" || die "patch $(basename "$patch") does not apply to tor $TOR_VERSION"
done
say "configuring (${CONFIGURE_FLAGS[*]})"
(cd "$src" && ./configure --quiet "${CONFIGURE_FLAGS[@]}" >"$work/configure.log" 2>&1) || { tail -20 "$work/configure.log" >&2; die "configure failed (log: $work/configure.log)"; }
say "building libtor.a with $(nproc) jobs"
(cd "$src" && make -j"$(nproc)" libtor.a >"$work/make.log" 2>&1) || { tail -30 "$work/make.log" >&2; die "make libtor.a failed (log: $work/make.log)"; }

# Install atomically: build the prefix next to the target, then swap it in.
staging="$prefix.staging.$$"
rm -rf "$staging"
mkdir -p "$staging/lib/pkgconfig" "$staging/include"
cp "$src/libtor.a" "$staging/lib/"
cp "$src/src/feature/api/tor_api.h" "$staging/include/"
write_pkg_config "$staging"
echo "$flags_id" > "$staging/.postern-stamp"
rm -rf "$prefix.old"; [ -d "$prefix" ] && mv "$prefix" "$prefix.old"
mv "$staging" "$prefix"; rm -rf "$prefix.old"
say "installed libtor.a ($(du -h "$prefix/lib/libtor.a" | cut -f1)) and tor_api.h into $prefix"
say "for swift build: export PKG_CONFIG_PATH=$prefix/lib/pkgconfig\${PKG_CONFIG_PATH:+:\$PKG_CONFIG_PATH}"
