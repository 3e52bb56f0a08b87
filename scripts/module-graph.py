#!/usr/bin/env python3
"""README's module graph, made from Package.swift (issue #25: the picture a newcomer reads must be
the one the build uses).

`swift package dump-package` gives the targets and their dependencies; the table lists every
module under Sources/ (products, C modules, the CLI, the benchmark and the transports' test
support) with what it depends on, lowest layer first. Tests and fuzz targets are left out.

  scripts/module-graph.py           rewrite the table between README's markers
  scripts/module-graph.py --check   exit 1 when README's table differs from Package.swift
"""
import json
import os
import subprocess
import sys

BEGIN = "<!-- module-graph:begin (scripts/module-graph.py writes this table) -->"
END = "<!-- module-graph:end -->"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def targets():
    dump = subprocess.run(["swift", "package", "--package-path", ROOT, "dump-package"],
                          check=True, capture_output=True, text=True).stdout
    found = {}
    for target in json.loads(dump)["targets"]:
        if not (target.get("path") or "").startswith("Sources/"):
            continue  # tests, test support under Tests/, fuzz targets
        dependencies = [value[0] for dependency in target.get("dependencies", []) for value in dependency.values()]
        found[target["name"]] = (target["type"], dependencies)
    return found


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
        if wanted != readme:
            print("module-graph: README.md's module graph differs from Package.swift; run scripts/module-graph.py")
            return 1
        print("module-graph: README.md matches Package.swift")
        return 0
    with open(readme_path, "w", encoding="utf-8") as handle:
        handle.write(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
