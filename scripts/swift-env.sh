# Sourced, not run, by every script that invokes swift (and usable in a shell:
# `source scripts/swift-env.sh`): puts the toolchain on PATH and the tor core's pkg-config directory
# on PKG_CONFIG_PATH. Package.swift reaches the tor core (CTor: tor-embedded.pc) and libnice's
# headers (CNice: postern-nice.pc) only through pkg-config, since SwiftPM refuses a dependency whose
# targets carry -L/-I as unsafe flags; without this a build fails with "tor_api.h not found".
# A prefix built before those files existed gets them written here (scripts/build-tor-core.sh).
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
postern_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case ":${PKG_CONFIG_PATH:-}:" in
  *":$postern_repo/.deps/tor/lib/pkgconfig:"*) ;;
  *) export PKG_CONFIG_PATH="$postern_repo/.deps/tor/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" ;;
esac
if [ -f "$postern_repo/.deps/tor/lib/libtor.a" ] && { [ ! -f "$postern_repo/.deps/tor/lib/pkgconfig/tor-embedded.pc" ] ||
   [ ! -f "$postern_repo/.deps/tor/lib/pkgconfig/postern-nice.pc" ]; }; then
  "$postern_repo/scripts/build-tor-core.sh" --pkg-config-only
fi
unset postern_repo
