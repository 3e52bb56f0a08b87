#!/usr/bin/env python3
"""Every file the repository's comments and docs cite is in the repository, and none names a path
of one machine (issue #25: a newcomer must be able to follow every reference).

Scans Sources, Tests, docs, scripts, Fuzz, Benchmarks, Examples (without build output), README.md,
Makefile and Package.swift for repository paths (docs/..., Sources/..., Tests/..., scripts/...,
Fuzz/..., Benchmarks/..., Examples/..., patches/...) and checks each exists (a path that ends in '*' or names a build
directory is a pattern, not a file). A path of one machine always fails: one under the checkout's
own absolute location or its parent's, or a relative path that climbs out of the repository to
something beside it ('../NAME'). Exit 1 with one line per problem. --self-test plants both kinds of problem and expects them
found."""
import os
import re
import sys
import tempfile

ROOTS = ["Sources", "Tests", "docs", "scripts", "Fuzz", "Benchmarks", "Examples", "README.md", "Makefile", "Package.swift"]
SUFFIXES = (".swift", ".md", ".sh", ".py", ".h", ".c", ".txt", "Makefile", ".yml", "testbed")
CITED = re.compile(r"(?<![A-Za-z0-9_./-])((?:docs|Sources|Tests|scripts|Fuzz|Benchmarks|Examples|patches)/[A-Za-z0-9_./*-]+)")
CLIMBING = re.compile(r"(?<![A-Za-z0-9_./-])\.\./([A-Za-z0-9_-][A-Za-z0-9_.-]*)")
ABSOLUTE = re.compile(r"(?<![A-Za-z0-9_.-])(/[A-Za-z0-9_./-]+)")


def machine_paths(line, repo):
    """Paths in `line` that lead to this machine's checkout or to what lies beside it: the
    checkout's absolute location or its parent's, and '../NAME' for a NAME beside the checkout and
    not in it. Derived from where the checkout is, so no machine's path is written here."""
    checkout = os.path.abspath(repo)
    beside = os.path.dirname(checkout)
    found = [path for path in ABSOLUTE.findall(line)
             if path == checkout or path.startswith(checkout + "/") or (beside != "/" and path.startswith(beside + "/"))]
    found += ["../" + name for name in CLIMBING.findall(line)
              if os.path.exists(os.path.join(beside, name)) and not os.path.exists(os.path.join(checkout, name))]
    return found
SKIP_DIRS = {".build", ".build-fuzz", ".deps", ".testbed", ".test-output", "Corpus", "Vectors", "vectors", "__pycache__"}


def files(repo):
    for root in ROOTS:
        path = os.path.join(repo, root)
        if os.path.isfile(path):
            yield path
            continue
        for directory, subdirs, names in os.walk(path):
            subdirs[:] = [d for d in subdirs if d not in SKIP_DIRS]
            for name in names:
                if name.endswith(SUFFIXES):
                    yield os.path.join(directory, name)


def problems(repo):
    me = os.path.abspath(__file__)
    for path in files(repo):
        if os.path.abspath(path) == me:
            continue
        with open(path, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                where = f"{os.path.relpath(path, repo)}:{number}"
                for path_of_machine in machine_paths(line, repo):
                    yield f"{where}: a path of one machine: {path_of_machine}"
                # A plan (docs/plans/) names the files it will create: only its machine paths count.
                if os.path.relpath(path, repo).startswith(os.path.join("docs", "plans") + os.sep):
                    continue
                for match in CITED.finditer(line):
                    cited = match.group(1).rstrip(".,:;)")
                    if "*" in cited or cited.endswith("/.build") or "/.build/" in cited:
                        continue
                    # A prefix such as patches/tor/0001 names the file that starts with it.
                    target = os.path.join(repo, cited)
                    parent, stem = os.path.split(target)
                    if os.path.exists(target) or (os.path.isdir(parent) and any(n.startswith(stem) for n in os.listdir(parent))):
                        continue
                    yield f"{where}: cites {cited}, which is not in the repository"


def self_test():
    with tempfile.TemporaryDirectory() as repo:
        os.makedirs(os.path.join(repo, "docs"))
        os.makedirs(os.path.join(repo, "Sources", "A"))
        with open(os.path.join(repo, "docs", "REAL.md"), "w") as f:
            f.write("see docs/REAL.md and Sources/A/\n")
        with open(os.path.join(repo, "Sources", "A", "a.swift"), "w") as f:
            f.write("// spec: docs/specs/gone.md\n// notes: " + os.path.join(repo, "notes", "x.md") + "\n")
        found = list(problems(repo))
        assert any("docs/specs/gone.md" in p for p in found), found
        assert any(os.path.join(repo, "notes", "x.md") in p for p in found), found
        assert not any("REAL.md" in p for p in found), found
    print("check-citations self-test: both planted problems found, the real citation passed")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        sys.exit(0)
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    found = list(problems(repo))
    for line in found:
        print(line)
    print(f"check-citations: {len(found)} problem(s)")
    sys.exit(1 if found else 0)
