"""A real Nostr relay (PyPI nostr-relay 1.14, sqlite, offline) for the interop tests.
usage: relay_peer.py HOST PORT STATE_DIR  -> prints 'PORT n' once the relay accepts connections."""
import ctypes, os, socket, subprocess, sys, time, signal
signal.pthread_sigmask(signal.SIG_UNBLOCK, signal.valid_signals())
host, port, state = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.makedirs(state, exist_ok=True)
config = os.path.join(state, "relay.yaml")
with open(config, "w") as f:
    f.write(f"""DEBUG: false
relay_name: postern test relay
storage:
  sqlalchemy.url: sqlite+aiosqlite:///{state}/nostr.sqlite3
  validators:
    - nostr_relay.validators.is_signed
verification:
  nip05_verification: disabled
gunicorn:
  bind: {host}:{port}
  host: {host}
  workers: 1
  loglevel: warning
authentication:
  enabled: false
""")
def die_with_parent():
    # The test stops this script with SIGKILL; the relay must not outlive it (PR_SET_PDEATHSIG).
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)
relay = subprocess.Popen(["nostr-relay", "-c", config, "serve", "--use-uvicorn"], cwd=state,
                         stdout=subprocess.DEVNULL, stderr=open(os.path.join(state, "relay.log"), "w"),
                         preexec_fn=die_with_parent)
def stop(*_):
    relay.kill()
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
deadline = time.time() + 60
while time.time() < deadline:
    if relay.poll() is not None:
        sys.exit(f"relay exited: {open(os.path.join(state, 'relay.log')).read()[-2000:]}")
    try:
        socket.create_connection((host, port), timeout=1).close()
        print(f"PORT {port}", flush=True)
        break
    except OSError:
        time.sleep(0.2)
try:
    relay.wait()
finally:
    relay.kill()
