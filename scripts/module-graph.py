#!/usr/bin/env python3
"""README's module graph, made from Package.swift (issue #25: the picture a newcomer reads must be
the one the build uses).

`swift package dump-package` gives the targets and their dependencies; the table lists every
module under Sources/ (products, C modules, the CLI, the benchmark and the transports' test
support) with what it depends on, lowest layer first. Tests and fuzz targets are left out.

  scripts/module-graph.py           rewrite the table between README's markers
  scripts/module-graph.py --check   exit 1 when README's table differs from Package.swift, or when
                                    the layering rules below do not hold

Layering rules, checked from the sources with the table (the build alone does not catch the first:
a module can import anything that was built before it):
- every module a Swift file under Sources/ imports is a declared dependency of its target (or the
  toolchain's: Foundation, Glibc (Darwin behind canImport), Dispatch, Synchronization);
- no transport (a target under Sources/Transports/ named ...Transport) depends on another
  transport or on the settings store (BridgeConfig).
"""
import re
import json
import os
import subprocess
import sys

BEGIN = "<!-- module-graph:begin (scripts/module-graph.py writes this table) -->"
END = "<!-- module-graph:end -->"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


TOOLCHAIN_MODULES = {"Foundation", "FoundationEssentials", "Glibc", "Darwin", "Dispatch", "Synchronization", "_Concurrency"}
IMPORT = re.compile(r"^\s*(?:@\w+\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+(?:(?:struct|class|enum|protocol|func|var|typealias)\s+)?(\w+)", re.M)
_TARGETS = None


def targets(with_paths=False):
    global _TARGETS
    if _TARGETS is None:
        dump = subprocess.run(["swift", "package", "--package-path", ROOT, "dump-package"],
                              check=True, capture_output=True, text=True).stdout
        _TARGETS = json.loads(dump)["targets"]
    found = {}
    for target in _TARGETS:
        if not (target.get("path") or "").startswith("Sources/"):
            continue  # tests, test support under Tests/, fuzz targets
        dependencies = [value[0] for dependency in target.get("dependencies", []) for value in dependency.values()]
        found[target["name"]] = (target["type"], dependencies, target["path"]) if with_paths else (target["type"], dependencies)
    return found


def layering_problems():
    problems = []
    graph = targets(with_paths=True)
    for name, (kind, dependencies, path) in sorted(graph.items()):
        if kind == "system":
            continue
        for directory, _, files in os.walk(os.path.join(ROOT, path)):
            for file in sorted(files):
                if not file.endswith(".swift"):
                    continue
                source = open(os.path.join(directory, file), encoding="utf-8").read()
                for module in sorted(set(IMPORT.findall(source))):
                    if module not in dependencies and module not in TOOLCHAIN_MODULES and module != name:
                        where = os.path.relpath(os.path.join(directory, file), ROOT)
                        problems.append(f"{where} imports {module}, which is not a dependency of {name} in Package.swift")
        if path.startswith("Sources/Transports/") and name.endswith("Transport"):
            for dependency in dependencies:
                if dependency == "BridgeConfig":
                    problems.append(f"transport {name} depends on the settings store (BridgeConfig)")
                elif dependency.endswith("Transport") and dependency != name:
                    problems.append(f"transport {name} depends on another transport ({dependency})")
    return problems


def layered(graph):
    depth = {}

    def level(name):
        if name not in depth:
            depth[name] = 0
            depth[name] = 1 + max((level(d) for d in graph[name][1] if d in graph), default=-1)
        return depth[name]

    return sorted(graph, key=lambda name: (level(name), name))


def table():
    graph = targets()
    kinds = {"system": "C (system library)", "regular": "library", "executable": "executable"}
    lines = ["| module | kind | depends on |", "| --- | --- | --- |"]
    for name in layered(graph):
        kind, dependencies = graph[name]
        if kind == "regular" and name.startswith("C") and name[1:2].isupper():
            kind_text = "C (compiled shim)"
        else:
            kind_text = kinds.get(kind, kind)
        lines.append(f"| `{name}` | {kind_text} | {', '.join(f'`{d}`' for d in dependencies) or '—'} |")
    return "\n".join(lines)


def main():
    readme_path = os.path.join(ROOT, "README.md")
    readme = open(readme_path, encoding="utf-8").read()
    if BEGIN not in readme or END not in readme:
        print("module-graph: README.md has no module-graph markers")
        return 1
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    wanted = f"{head}{BEGIN}\n{table()}\n{END}{tail}"
    if sys.argv[1:] == ["--check"]:
        status = 0
        if wanted != readme:
            print("module-graph: README.md's module graph differs from Package.swift; run scripts/module-graph.py")
            status = 1
        else:
            print("module-graph: README.md matches Package.swift")
        problems = layering_problems()
        for problem in problems:
            print(f"module-graph: {problem}")
        if problems:
            status = 1
        else:
            print("module-graph: every import is a declared dependency; no transport depends on the store or another transport")
        return status
    with open(readme_path, "w", encoding="utf-8") as handle:
        handle.write(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
