#!/usr/bin/env bash
# Installs the PyPI peers the app-layer tests run against (exact versions; idempotent).
# websockets: independent RFC 6455 server; nostr-relay: a real NIP-01 relay (offline, sqlite);
# nostr-sdk: independent NIP-44/NIP-17 implementation (rust-nostr bindings).
set -euo pipefail
PYTHON="${PYTHON:-python3}"
PEERS=("websockets==17.4" "nostr-relay==1.14" "nostr-sdk==0.45.1")
if "$PYTHON" - "${PEERS[@]}" <<'PY'
import sys
from importlib.metadata import version, PackageNotFoundError
try:
    sys.exit(0 if all(version(p.split("==")[0]) == p.split("==")[1] for p in sys.argv[1:]) else 1)
except PackageNotFoundError:
    sys.exit(1)
PY
then exit 0; fi
extra=()
# Debian's own python3 is "externally managed" (PEP 668); CI machines are throwaway.
if "$PYTHON" -c 'import sys, sysconfig, os; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")) else 1)'; then
  extra+=(--break-system-packages)
fi
echo "install-test-peers: installing ${PEERS[*]}" >&2
"$PYTHON" -m pip install --quiet --disable-pip-version-check "${extra[@]}" "${PEERS[@]}"
