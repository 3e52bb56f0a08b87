#!/usr/bin/env python3
"""Fails when a test bed bridge's address, fingerprint or cert appears in any file under the given
directories: the test run's outputs, and the files tests wrote (postern's logs and state, kept by
scripts/keep-files.py even when the tests deleted them).

  check-leaks.py --env TESTBED_ENV DIR...
  check-leaks.py --self-test

Secrets are taken from the bridge lines in the test bed's env file (TB_BRIDGE_VANILLA, TB_BRIDGE_OBFS4,
TB_BRIDGE_SNOWFLAKE) with the rules of TestBed.bridgeSecrets: every host:port and its host, every
40-hex fingerprint, every argument value longer than 20 characters (certs), and a webtunnel url's path
(TB_BRIDGE_WEBTUNNEL; the path is the bridge's secret, its host an ordinary web site). Files that hold bridges by
design are skipped, each rule with its reason (SKIPPED below); everything else must be clean. Leaks
are reported by file and kind, never by printing the secret.
"""
import os
import re
import shlex
import sys
import tempfile

# (pattern on the path relative to the scanned directory, reason). Kept narrow on purpose.
SKIPPED = [
    (re.compile(r"(^|/)bridges\.json(~\d+)?$"), "the bridge store: holds the bridges by design (0600)"),
    (re.compile(r"(^|/)bridges\.json\.tmp-[^/]*$"), "the bridge store's atomic-write temporary (becomes the store)"),
    (re.compile(r"(^|/)torrc[^/]*$"), "a tor configuration a test wrote for a stock tor client (Bridge lines by design)"),
    (re.compile(r"(^|/)obfs4_(state\.json|bridgeline\.txt)(~\d+)?$"), "obfs4proxy's own server state (the bridge's side)"),
    (re.compile(r"(^|/)(builtin-bridges|builtins)\.(txt|json)(~\d+)?$"), "a built-in bridge list a test hands to --builtin-bridges (bridges by design)"),
    (re.compile(r"(^|/)run-bridges\.txt(~\d+)?$"), "a bridge list a test hands to run --bridges-file, the documented way (bridges by design)"),
    (re.compile(r"\.pcapng?(~\d+)?$"), "a packet capture of a leak test: the wire, not a log"),
]
# A file written atomically is kept under its temporary name and its final name (one inode); a
# skipped final name skips its temporary too.
# Inside a tor data directory (it has a 'lock' or 'cached-certs'), tor's own state names its bridges
# (guard entries, descriptors): skipped. Its log is checked when the directory is Postern's (Postern
# always writes 'empty-torrc' there, TorManager.prepareDataDirectory) and skipped when it belongs to
# a stock Debian tor a test runs as a peer: tor logs "new bridge descriptor ... at ADDRESS" at notice
# level, which is why Postern's own tor logs at warn level only (TorConfiguration.noticeLevelLog).


def secrets_of(line):
    found = []
    for word in line.split():
        # The bridge's address is a bare word; key=value arguments (url=, ampcache=, fronts=, ice=)
        # name the rendezvous infrastructure, and splitting "ampcache=https://…" at its last colon
        # once made "ampcache=https" a secret that any unit test mentioning an AMP cache "leaked".
        if ":" in word and "=" not in word and not word.startswith(("http", "stun:")):
            found.append((word, "address"))
            found.append((word.rsplit(":", 1)[0].strip("[]"), "host"))
        if len(word) == 40 and all(c in "0123456789abcdefABCDEF" for c in word):
            found.append((word, "fingerprint"))
        key, equals, value = word.partition("=")
        # A dnstt server's public key is as secret as an obfs4 cert: it names the tunnel's server.
        if equals and len(value) > 20 and key in ("cert", "fingerprint", "pubkey"):
            found.append((value, key))
        # A webtunnel url's path is the bridge's secret (the host is an ordinary web site).
        if equals and key == "url" and line.startswith("webtunnel ") and "://" in value:
            path = value.split("://", 1)[1].partition("/")[2].split("?")[0].split("#")[0]
            if path:
                found.append((path, "webtunnel path"))
    return found


def load_secrets(env_path):
    secrets = []
    with open(env_path) as env:
        for raw in env:
            name, equals, value = raw.strip().partition("=")
            if equals and name.startswith("TB_BRIDGE_"):
                line = " ".join(shlex.split(value))
                secrets += [(s, kind, name) for s, kind in secrets_of(line) if len(s) >= 7]
    return secrets


def is_tor_state(path):
    """True for tor's own files in a tor data directory, and for a stock tor's log."""
    directory = os.path.dirname(path)
    name = os.path.basename(path)
    if os.path.basename(directory) in ("keys", "diff-cache"):
        directory = os.path.dirname(directory)
    here = set(os.listdir(directory)) if os.path.isdir(directory) else set()
    if not here & {"cached-certs", "lock"}:
        return False
    if re.search(r"\.log(~\d+)?$", name):
        return "empty-torrc" not in here
    return True


def skipped_inodes(roots):
    inodes = set()
    for root in roots:
        for current, _, files in os.walk(root):
            for name in files:
                path = os.path.join(current, name)
                if any(pattern.search(os.path.relpath(path, root)) for pattern, _ in SKIPPED):
                    try:
                        st = os.lstat(path)
                        inodes.add((st.st_dev, st.st_ino))
                    except OSError:
                        pass
    return inodes


def found_in(secret, kind, data):
    """An address or host counts only as a whole word: the bed's dnstt lines carry the placeholder
    192.0.2.4, which is not a leak inside a test's own 192.0.2.41:443."""
    if kind not in ("address", "host"):
        return secret.encode() in data
    pattern = rb"(?<![0-9A-Za-z.])" + re.escape(secret.encode()) + rb"(?![0-9A-Za-z])"
    return re.search(pattern, data) is not None


def scan(roots, secrets):
    leaks, scanned, skipped = [], 0, 0
    by_rule = skipped_inodes(roots)
    for root in roots:
        for current, _, files in os.walk(root):
            for name in files:
                path = os.path.join(current, name)
                relative = os.path.relpath(path, root)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if any(pattern.search(relative) for pattern, _ in SKIPPED) or is_tor_state(path) \
                        or (st.st_dev, st.st_ino) in by_rule:
                    skipped += 1
                    continue
                if not os.path.isfile(path) or os.path.islink(path):
                    continue  # sockets and pipes (a read could block), links (their target is scanned where it lives)
                try:
                    with open(path, "rb") as f:
                        data = f.read()
                except OSError:
                    continue
                scanned += 1
                for secret, kind, bridge in secrets:
                    if found_in(secret, kind, data):
                        leaks.append(f"{path}: the {kind} of {bridge}")
    return leaks, scanned, skipped


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) < 4 or argv[1] != "--env":
        print(__doc__.strip(), file=sys.stderr)
        return 64
    secrets = load_secrets(argv[2])
    if len(secrets) < 6:
        print(f"check-leaks: only {len(secrets)} secrets found in {argv[2]}: is the test bed's env complete?", file=sys.stderr)
        return 1
    leaks, scanned, skipped = scan(argv[3:], secrets)
    for leak in sorted(set(leaks)):
        print(f"LEAK {leak}")
    print(f"check-leaks: {len(secrets)} bridge secrets, {scanned} files scanned, {skipped} skipped by rule, {len(set(leaks))} leaks")
    return 1 if leaks else 0


def self_test():
    """Plants violations in a scratch tree and checks that each is caught and each skip is narrow."""
    failures = []
    with tempfile.TemporaryDirectory() as scratch:
        env = os.path.join(scratch, "env")
        cert = "A" * 27 + "b" * 43
        with open(env, "w") as f:
            f.write(f"TB_BRIDGE_VANILLA=127.0.3.1:5001\\ {'ab' * 20}\n")
            f.write(f"TB_BRIDGE_OBFS4=obfs4\\ 127.0.3.2:5002\\ {'CD' * 20}\\ cert={cert}\\ iat-mode=0\n")
            f.write(f"TB_BRIDGE_SNOWFLAKE_AMP=snowflake\\ 127.0.5.3:8080\\ {'EF' * 20}\\ fingerprint={'EF' * 20}\\ "
                    "url=https://broker.test/\\ ampcache=https://amp.test/\\ fronts=127.0.5.4\\ ice=stun:127.0.5.2:3478\n")
            f.write(f"TB_BRIDGE_WEBTUNNEL=webtunnel\\ \\[2001:db8:5e1c::1\\]:443\\ {'AB' * 20}\\ "
                    "url=https://webtunnel.test/wt-0123456789abcdef\\ ver=0.0.1\n")
            f.write(f"TB_BRIDGE_DNSTT_UDP=dnstt\\ 192.0.2.4:3\\ {'AB' * 20}\\ udp=198.51.100.53:53\\ pubkey={'5e' * 32}\\ domain=t.postern.test\n")
        secrets = load_secrets(env)
        if any(s.startswith(("ampcache=", "url=", "fronts=", "ice=")) for s, _, _ in secrets):
            failures.append(f"rendezvous arguments taken for bridge secrets: {[s for s, _, _ in secrets if '=' in s]}")
        if "webtunnel.test" in {s for s, _, _ in secrets}:
            failures.append("a webtunnel url's host (an ordinary web site) taken for a secret")
        kinds = sorted({kind for _, kind, _ in secrets})
        if kinds != ["address", "cert", "fingerprint", "host", "pubkey", "webtunnel path"]:
            failures.append(f"secret kinds {kinds}")
        run = os.path.join(scratch, "run")
        tor = os.path.join(run, "tmp/postern-x/state/tor")
        os.makedirs(tor)

        def write(relative, text):
            path = os.path.join(run, relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)

        write("logs/unit.log", "Test run with 3 tests passed\nbridge [scrubbed]\nsnowflake 192.0.2.3:80 ampcache=https://cdn.example/\n"
              "obfs4 192.0.2.41:443 (a test's own address, which holds the dnstt placeholder's text)\n")
        write("tmp/postern-x/bridges.json", f'{{"line": "obfs4 127.0.3.2:5002 {"CD" * 20} cert={cert}"}}')
        write("tmp/postern-x/state/tor/lock", "")
        write("tmp/postern-x/state/tor/state", f"Guard in=bridges rsa_id={'CD' * 20} bridge_addr=127.0.3.2:5002\n")
        write("tmp/postern-x/state/tor/tor.log", "[notice] Bootstrapped 100%\n")
        write("tmp/postern-x/state/tor/empty-torrc", "")
        write("tmp/postern-x/bridges.json.tmp-123-456", f"obfs4 127.0.3.2:5002 {'CD' * 20}")
        write("tmp/stock-tor/lock", "")
        write("tmp/stock-tor/notice.log", "new bridge descriptor at 127.0.3.2")
        write("kept/batch/builtin-bridges.txt", f"obfs4 127.0.3.2:5002 {'CD' * 20} cert={cert}\n")
        os.link(os.path.join(run, "kept/batch/builtin-bridges.txt"), os.path.join(run, "kept/batch/.dat.nosync01.abc"))
        write("kept/batch/capture.pcapng", f"fingerprint={'CD' * 20}")
        leaks, _, _ = scan([run], secrets)
        if leaks:
            failures.append(f"a clean tree reported leaks: {leaks}")
        for relative, text, kind in [
            ("logs/integration.log", "dialing 127.0.3.2:5002 failed", "address"),
            ("logs/dnstt.log", "dnstt via 192.0.2.4:3 failed", "address"),
            ("logs/peer.log", "peer:127.0.3.1 closed", "host"),
            ("tmp/postern-x/state/tor/tor.log", "connecting to 127.0.3.1", "host"),
            ("tmp/postern-x/state/run-status.json", f'{{"bridge": "{"ab" * 20}"}}', "fingerprint"),
            ("tmp/postern-y/output.txt", f"cert={cert}", "cert"),
            ("tmp/stock-tor-without-a-lock/notice.log", "127.0.3.2:5002", "address"),
            ("tmp/postern-x/bridges.json.bak", f"{'CD' * 20}", "fingerprint"),
            ("kept/batch/.dat.nosync02.def", f"cert={cert}", "cert"),
            ("logs/webtunnel.log", "GET /wt-0123456789abcdef HTTP/1.1", "webtunnel path"),
            ("logs/dnstt-key.log", f"server key {'5e' * 32}", "pubkey"),
        ]:
            write(relative, text)
            leaks, _, _ = scan([run], secrets)
            if not any(relative in leak and kind in leak for leak in leaks):
                failures.append(f"a planted {kind} in {relative} was not reported: {leaks}")
            write(relative, "clean\n")
    for failure in failures:
        print(f"check-leaks self-test: FAIL {failure}")
    print(f"check-leaks self-test: {'FAIL' if failures else 'PASS'} (11 planted leaks, 1 clean tree)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
