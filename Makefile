# Postern. `make demo` runs the main job, `make test` the tests; both install what they need.
SHELL := /bin/bash
export PATH := $(PATH):/opt/swift/usr/bin

.PHONY: all deps build test demo clean testbed-up testbed-down

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

testbed-up: deps
	scripts/testbed up

testbed-down:
	scripts/testbed down

clean:
	rm -rf .build .testbed
