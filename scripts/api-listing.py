#!/usr/bin/env python3
"""The public API of the modules an app embeds, as a listing checked into the repository.

  scripts/api-listing.py            rewrites docs/api/<Module>.txt from the debug build
  scripts/api-listing.py --check    fails (exit 1) with a diff when the build's public surface and
                                    the checked-in listing differ, or when a public declaration has
                                    no doc comment

A change to what an app can call must be deliberate: the listing changes in the same commit, where
a reviewer sees it. One line per public declaration (its declaration as the compiler prints it,
under its full path), sorted; members that the module only extends on other modules' types are
listed under "extends <Module>". Declarations without a doc comment are marked `[undocumented]`,
and the header counts them.

Reads the symbol graph (swift-symbolgraph-extract, part of the toolchain) of the modules built by
`swift build --build-tests` in .build/debug; the C modules are found through their module maps.
"""
import difflib
import glob
import json
import os
import subprocess
import sys
import tempfile

MODULES = ["PosternRuntime", "PosternAppLayer"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LISTING_DIR = os.path.join(ROOT, "docs", "api")


def extract(module, output):
    args = ["swift-symbolgraph-extract", "-module-name", module,
            "-I", os.path.join(ROOT, ".build", "debug", "Modules"),
            "-target", "x86_64-unknown-linux-gnu", "-minimum-access-level", "public",
            "-output-dir", output]
    for directory in sorted(glob.glob(os.path.join(ROOT, "Sources", "C*"))):
        if os.path.exists(os.path.join(directory, "module.modulemap")):
            args += ["-I", directory]
        if os.path.isdir(os.path.join(directory, "include")):
            args += ["-Xcc", "-I" + os.path.join(directory, "include")]
    for modulemap in sorted(glob.glob(os.path.join(ROOT, ".build", "*", "debug", "*.build", "module.modulemap"))):
        args += ["-Xcc", "-fmodule-map-file=" + modulemap]
    # The tor core's and libnice's pkg-config files are in the core's prefix (scripts/swift-env.sh);
    # NSS's (CNSS, below the transports through TransportTLS) is the system's.
    environment = dict(os.environ)
    core = os.path.join(ROOT, ".deps", "tor", "lib", "pkgconfig")
    environment["PKG_CONFIG_PATH"] = core + (":" + environment["PKG_CONFIG_PATH"] if environment.get("PKG_CONFIG_PATH") else "")
    flags = subprocess.run(["pkg-config", "--cflags-only-I", "tor-embedded", "postern-nice", "nss"],
                           capture_output=True, text=True, check=True, env=environment).stdout.split()
    for flag in flags:
        args += ["-Xcc", flag]
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"api-listing: swift-symbolgraph-extract failed for {module} (build first: swift build --build-tests)\n"
                 + result.stderr[-3000:])


def lines_of(path, heading):
    with open(path, encoding="utf-8") as handle:
        graph = json.load(handle)
    lines = []
    undocumented = 0
    for symbol in graph.get("symbols", []):
        # Members the compiler synthesises (Equatable's ==, Codable's init(from:)) are the
        # protocols' API, not the module's.
        if "::SYNTHESIZED::" in symbol.get("identifier", {}).get("precise", ""):
            continue
        declaration = "".join(f["spelling"] for f in symbol.get("declarationFragments", []))
        declaration = " ".join(declaration.split())
        where = ".".join(symbol.get("pathComponents", []))
        documented = bool(symbol.get("docComment", {}).get("lines"))
        if not documented:
            undocumented += 1
            mark = "  [undocumented]"
        else:
            mark = ""
        lines.append(f"{heading}{where}: {declaration}{mark}")
    return sorted(set(lines)), undocumented


def listing(module):
    with tempfile.TemporaryDirectory() as output:
        extract(module, output)
        own, undocumented = lines_of(os.path.join(output, f"{module}.symbols.json"), "")
        extensions = []
        for path in sorted(glob.glob(os.path.join(output, f"{module}@*.symbols.json"))):
            other = os.path.basename(path)[len(module) + 1:-len(".symbols.json")]
            lines, count = lines_of(path, f"extends {other}: ")
            extensions += lines
            undocumented += count
    header = [f"# The public API of {module} (scripts/api-listing.py writes this file; make test checks it).",
              f"# {len(own) + len(extensions)} declarations, {undocumented} without a doc comment.",
              ""]
    return "\n".join(header + own + extensions) + "\n"


def main():
    check = "--check" in sys.argv[1:]
    unknown = [a for a in sys.argv[1:] if a != "--check"]
    if unknown:
        print(__doc__)
        sys.exit(64)
    status = 0
    os.makedirs(LISTING_DIR, exist_ok=True)
    for module in MODULES:
        current = listing(module)
        path = os.path.join(LISTING_DIR, f"{module}.txt")
        if check:
            try:
                with open(path, encoding="utf-8") as handle:
                    recorded = handle.read()
            except FileNotFoundError:
                recorded = ""
            if recorded != current:
                status = 1
                print(f"api-listing: the public API of {module} differs from {os.path.relpath(path, ROOT)}"
                      " (if the change is deliberate, run scripts/api-listing.py and commit the listing):")
                sys.stdout.writelines(difflib.unified_diff(recorded.splitlines(True), current.splitlines(True),
                                                           "recorded", "built", n=0))
            else:
                print(f"api-listing: {module} matches its listing")
            missing = [line for line in current.splitlines() if line.endswith("[undocumented]")]
            if missing:
                status = 1
                print(f"api-listing: {len(missing)} public declaration(s) of {module} have no doc comment:")
                for line in missing:
                    print("  " + line[:-len("  [undocumented]")])
        else:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(current)
            print(f"api-listing: wrote {os.path.relpath(path, ROOT)}")
    sys.exit(status)


if __name__ == "__main__":
    main()
