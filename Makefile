# Postern. `make demo` runs the main job, `make test` the tests; both install what they need.
SHELL := /bin/bash
export PATH := $(PATH):/opt/swift/usr/bin
# Package.swift reaches the tor core and libnice's headers through the pkg-config files that
# scripts/build-tor-core.sh (run by `deps`) writes into the core's prefix (docs/TOR-CORE-PROVENANCE.md).
export PKG_CONFIG_PATH := $(CURDIR)/.deps/tor/lib/pkgconfig$(if $(PKG_CONFIG_PATH),:$(PKG_CONFIG_PATH))

.PHONY: all deps build test test-fast demo bench fuzz clean testbed-up testbed-down

all: build

deps:
	scripts/install-deps.sh

# The shipped binary: optimised, with the Swift runtime and Foundation linked statically (no
# libswiftCore/libFoundation/ICU .so to map; see docs/PERFORMANCE.md). Tests keep using the debug
# build that `swift build --build-tests` makes.
RELEASE_BUILD := swift build -c release --static-swift-stdlib

build: deps
	$(RELEASE_BUILD) --product postern

test:
	scripts/run-tests.sh

# The unit, CLI and transport tests (one process, in the test bed's namespace) and the repository
# checks; no test-bed integration tests, fuzz stage or leak check. Under 5 minutes after a build.
test-fast:
	scripts/run-tests.sh --fast

demo: deps
	$(RELEASE_BUILD) --product postern
	scripts/demo.sh

# scripts/bench.sh, one run: obfs4 client vs obfs4proxy's own client (throughput, CPU per 100 MB
# both ways, against the cipher alone too, handshake); TLS handshake time of TransportTLS (NSS,
# firefox-esr and randomized-alpn) vs OpenSSL's default client against one s_server; in one test bed it brings up and takes down,
# `postern run` RSS vs tor + obfs4proxy through the same obfs4 bridge, and our snowflake client vs
# Debian's snowflake-client (bootstrap, channel, first byte, throughput); webtunnel and dnstt (no
# Debian client: figures, or ratios against POSTERN_BASELINE); then the RESULT lines.
# Then connection assist: time to ready under none, block-tor, block-tor-and-bridges for the race and
# sequential strategies and the working route alone (its own test bed), then under issue 22's fet
# (P = 100 %), freeze and burst with time to verdict as well (about 4 min more).
bench: deps
	scripts/bench.sh
	scripts/bench-assist.sh

# libFuzzer over every decoder (one target each, see Fuzz/README.md): FUZZ_SECONDS each, then a
# table of executions and coverage per target. A crash or a broken invariant fails the run.
FUZZ_SECONDS ?= 60
fuzz: deps
	scripts/fuzz.sh --seconds $(FUZZ_SECONDS)

testbed-up: deps
	scripts/testbed up

testbed-down:
	scripts/testbed down

clean:
	rm -rf .build .build-fuzz .testbed
