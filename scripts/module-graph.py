#!/usr/bin/env python3
"""README's module graph, made from Package.swift (issue #25: the picture a newcomer reads must be
the one the build uses).

`swift package dump-package` gives the targets and their dependencies; the table lists every
module under Sources/ (what the products link: libraries, C modules, the CLI) and under Benchmarks/
(the benchmark, not a product) with what it depends on, lowest layer first. Tests, test support
(Tests/) and fuzz targets (Fuzz/) are left out.

--check also holds Sources/ to product code only (issue #25): every module there is linked by a
library or executable product, and none depends on a module outside Sources/ (test support, a
benchmark, a fuzz harness).

  scripts/module-graph.py           rewrite the table between README's markers
  scripts/module-graph.py --check   exit 1 when README's table differs from Package.swift, or when
                                    Sources/ holds a module no product links or one that depends on
                                    code outside Sources/, or when the layering rules below do not hold

Layering rules, checked from the sources (the build alone does not catch the first: a module can
import anything that was built before it):
- every module a Swift file of a module in the table imports is a declared dependency of its target
  (or the toolchain's: Foundation, Glibc (Darwin behind canImport), Dispatch, Synchronization);
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
# Where the table's modules live: product code, then the benchmark (a module, not a product).
PRODUCT_ROOT = "Sources/"
BENCHMARK_ROOT = "Benchmarks/"


def package():
    dump = subprocess.run(["swift", "package", "--package-path", ROOT, "dump-package"],
                          check=True, capture_output=True, text=True).stdout
    return json.loads(dump)


def dependencies(target):
    return [value[0] for dependency in target.get("dependencies", []) for value in dependency.values()]


def targets(manifest):
    """name -> (type, dependencies, path) of every module in the table."""
    found = {}
    for target in manifest["targets"]:
        path = target.get("path") or ""
        if path.startswith((PRODUCT_ROOT, BENCHMARK_ROOT)):
            found[target["name"]] = (target["type"], dependencies(target), path)
    return found


def misplaced(manifest):
    """Why a module under Sources/ is not product code: no product links it, or it depends on a
    module outside Sources/. One line per problem."""
    by_name = {target["name"]: target for target in manifest["targets"]}
    in_sources = {name for name, target in by_name.items() if (target.get("path") or "").startswith(PRODUCT_ROOT)}
    linked = set()
    pending = [name for product in manifest["products"] for name in product["targets"]]
    while pending:
        name = pending.pop()
        if name in linked or name not in by_name:
            continue
        linked.add(name)
        pending += dependencies(by_name[name])
    problems = [f"{by_name[name]['path']}: `{name}` is under Sources/ but no product links it"
                for name in sorted(in_sources - linked)]
    for name in sorted(in_sources):
        for dependency in dependencies(by_name[name]):
            if dependency in by_name and dependency not in in_sources:
                problems.append(f"{by_name[name]['path']}: `{name}` depends on `{dependency}`, which is not product code "
                                f"({by_name[dependency].get('path') or 'no path'})")
    return problems


TOOLCHAIN_MODULES = {"Foundation", "FoundationEssentials", "Glibc", "Darwin", "Dispatch", "Synchronization", "_Concurrency"}
IMPORT = re.compile(r"^\s*(?:@\w+\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+(?:(?:struct|class|enum|protocol|func|var|typealias)\s+)?(\w+)", re.M)


def layering_problems(manifest):
    problems = []
    for name, (kind, needs, path) in sorted(targets(manifest).items()):
        if kind == "system":
            continue
        for directory, _, files in os.walk(os.path.join(ROOT, path)):
            for file in sorted(files):
                if not file.endswith(".swift"):
                    continue
                source = open(os.path.join(directory, file), encoding="utf-8").read()
                for module in sorted(set(IMPORT.findall(source))):
                    if module not in needs and module not in TOOLCHAIN_MODULES and module != name:
                        where = os.path.relpath(os.path.join(directory, file), ROOT)
                        problems.append(f"{where} imports {module}, which is not a dependency of {name} in Package.swift")
        if path.startswith("Sources/Transports/") and name.endswith("Transport"):
            for dependency in needs:
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


def table(manifest):
    graph = targets(manifest)
    kinds = {"system": "C (system library)", "regular": "library", "executable": "executable"}
    lines = ["| module | kind | depends on |", "| --- | --- | --- |"]
    for name in layered(graph):
        kind, needs, path = graph[name]
        if kind == "regular" and name.startswith("C") and name[1:2].isupper():
            kind_text = "C (compiled shim)"
        else:
            kind_text = kinds.get(kind, kind)
        if path.startswith(BENCHMARK_ROOT):
            kind_text += f" (benchmark, `{path}`, not a product)"
        lines.append(f"| `{name}` | {kind_text} | {', '.join(f'`{d}`' for d in needs) or '—'} |")
    return "\n".join(lines)


def main():
    readme_path = os.path.join(ROOT, "README.md")
    readme = open(readme_path, encoding="utf-8").read()
    if BEGIN not in readme or END not in readme:
        print("module-graph: README.md has no module-graph markers")
        return 1
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    manifest = package()
    wanted = f"{head}{BEGIN}\n{table(manifest)}\n{END}{tail}"
    if sys.argv[1:] == ["--check"]:
        problems = misplaced(manifest) + layering_problems(manifest)
        for problem in problems:
            print(f"module-graph: {problem}")
        if wanted != readme:
            print("module-graph: README.md's module graph differs from Package.swift; run scripts/module-graph.py")
            return 1
        if problems:
            return 1
        print("module-graph: README.md matches Package.swift; every module under Sources/ is product code;"
              " every import is a declared dependency; no transport depends on the store or another transport")
        return 0
    with open(readme_path, "w", encoding="utf-8") as handle:
        handle.write(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
