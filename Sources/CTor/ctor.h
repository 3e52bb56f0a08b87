// tor_api.h from the pinned tor core build (scripts/build-tor-core.sh installs it into its prefix,
// .deps/tor by default). The include directory comes from the prefix's tor-embedded.pc, found on
// PKG_CONFIG_PATH (Package.swift's CTor names it); without it the build stops here, saying so.
#if __has_include(<tor_api.h>)
#include <tor_api.h>
#else
#error "tor_api.h not found: build the tor core (scripts/build-tor-core.sh) and put <prefix>/lib/pkgconfig on PKG_CONFIG_PATH (docs/TOR-CORE-PROVENANCE.md)"
#endif
