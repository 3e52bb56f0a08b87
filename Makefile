# Postern. `make demo` runs the main job, `make test` the tests; both install what they need.
SHELL := /bin/bash
export PATH := $(PATH):/opt/swift/usr/bin

.PHONY: all deps build test demo bench fuzz clean testbed-up testbed-down

all: build

deps:
	scripts/install-deps.sh

build: deps
	swift build

test:
	scripts/run-tests.sh

demo: deps
	swift build
	scripts/demo.sh

# obfs4 client vs obfs4proxy's own client on the same path: throughput, CPU per 100 MB, handshake.
# snowflake client vs Debian's snowflake-client on one test-bed stack: bootstrap, first byte,
# throughput both ways (brings up and takes down its own test bed).
bench: deps
	swift run -c release postern-bench obfs4
	scripts/bench-snowflake.sh

# libFuzzer over the bridge-paste parser and the obfs4 frame decoder (FUZZ_RUNS inputs each).
FUZZ_RUNS ?= 1000000
fuzz: deps
	swift build -c release --scratch-path .build-fuzz -Xswiftc -sanitize=fuzzer --product BridgeParserFuzzer
	swift build -c release --scratch-path .build-fuzz -Xswiftc -sanitize=fuzzer --product Obfs4FrameFuzzer
	mkdir -p fuzz-artifacts/bridge-corpus fuzz-artifacts/obfs4-corpus
	cp Tests/BridgeConfigTests/Corpus/*.txt fuzz-artifacts/bridge-corpus/
	.build-fuzz/release/BridgeParserFuzzer -runs=$(FUZZ_RUNS) -artifact_prefix=fuzz-artifacts/ fuzz-artifacts/bridge-corpus
	.build-fuzz/release/Obfs4FrameFuzzer -runs=$(FUZZ_RUNS) -max_len=8192 -artifact_prefix=fuzz-artifacts/ fuzz-artifacts/obfs4-corpus

testbed-up: deps
	scripts/testbed up

testbed-down:
	scripts/testbed down

clean:
	rm -rf .build .testbed
