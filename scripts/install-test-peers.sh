#!/usr/bin/env bash
# Installs the PyPI peers the app-layer tests run against (exact versions; idempotent).
# websockets: independent RFC 6455 server; nostr-relay: a real NIP-01 relay (offline, sqlite);
# nostr-sdk: independent NIP-44/NIP-17 implementation (rust-nostr bindings).
set -euo pipefail
PYTHON="${PYTHON:-python3}"
"$PYTHON" -m pip install --quiet --disable-pip-version-check \
  "websockets==17.4" "nostr-relay==1.14" "nostr-sdk==0.45.1"
