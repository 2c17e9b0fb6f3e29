#!/usr/bin/env python3
"""Holds every #include "common/..." and "tools/..." against the layers the build declares, so
that no folder reaches up a floor, no product folder reaches a test tool, and the folders form no
circle.

  check_layers.py --graph BUILD/layers.json [--source DIR] [--quiet]
  check_layers.py --graph BUILD/layers.json --table    the graph as docs/design.md's table
  check_layers.py ... --doc docs/design.md              also: the doc holds that table as it is

The graph is written by CMake from the targets' own link libraries (common/cmake/
folder_libraries.cmake): {"common/rides": ["common/base", ...], "api": [...], ...}, one entry per
folder of common/ and of tools/ (its library) and per main's folder (its executable). tools/ holds
the test tools (the stand-in provider, the simulator): a folder of common/ that included one would
include a folder it does not link, as any upward include does. A file of a folder may
include its own folder and the folders its target links itself: not those it reaches only through
them, so common/rides, which links common/payments, which links common/http, still may not name
common/http (the flows know no HTTP). Fails, naming the file, the line and both folders, on:
  - an include of a folder the file's folder does not link (an arrow back up a floor, or one to a
    folder it was never given);
  - a circle in the declared graph itself (static libraries may link each other in a loop);
  - a folder of common/ or tools/ holding C++ files but no library.
Standard library only; it runs before every build compiles anything, and as the `layers` test.
"""
import argparse
import json
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"((common|tools)/([^/"]+)/[^"]*)"')
# The roots whose folders are libraries of their own.
LIBRARY_ROOTS = ("common", "tools")
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cc", ".ipp")


def find_circle(graph):
    """A list of folders that link each other in a loop (first == last), or None."""
    state = {}  # folder -> "open" while on the path, "done" after

    def visit(folder, path):
        state[folder] = "open"
        path.append(folder)
        for used in graph.get(folder, []):
            if state.get(used) == "open":
                return path[path.index(used):] + [used]
            if used not in state:
                circle = visit(used, path)
                if circle:
                    return circle
        path.pop()
        state[folder] = "done"
        return None

    for folder in sorted(graph):
        if folder not in state:
            circle = visit(folder, [])
            if circle:
                return circle
    return None


def floors(graph):
    """Each folder's floor: 1 for one that links no folder, else one above the highest it links."""
    floor = {}

    def of(folder):
        if folder not in floor:
            floor[folder] = 1 + max((of(used) for used in graph.get(folder, [])), default=0)
        return floor[folder]

    for folder in graph:
        of(folder)
    return floor


def table(graph):
    """The declared graph as a Markdown table, from the top floor down (docs/design.md holds it)."""
    floor = floors(graph)
    lines = ["| floor | folder | may include (folders of `common/` unless named) |", "| --- | --- | --- |"]
    for folder in sorted(graph, key=lambda f: (-floor[f], f)):
        uses = ", ".join(used.removeprefix("common/") for used in sorted(graph[folder], key=lambda f: (-floor[f], f)))
        uses = uses or "nothing of ours"
        lines.append(f"| {floor[folder]} | `{folder}/` | {uses} |")
    return "\n".join(lines) + "\n"


def source_files(root, folder):
    for directory, _, names in os.walk(os.path.join(root, folder)):
        for name in sorted(names):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.relpath(os.path.join(directory, name), root)


def check(graph, root):
    """The problems found, one line each (empty when the tree keeps its layers), and how many
    includes were read."""
    problems = []
    circle = find_circle(graph)
    if circle:
        problems.append("the declared graph has a circle: " + " -> ".join(circle))
    for library_root in LIBRARY_ROOTS:
        parent = os.path.join(root, library_root)
        for name in sorted(os.listdir(parent)) if os.path.isdir(parent) else []:
            folder = f"{library_root}/{name}"
            if os.path.isdir(os.path.join(parent, name)) and folder not in graph and any(source_files(root, folder)):
                problems.append(f"{folder} holds C++ files but no library: declare it in {library_root}/CMakeLists.txt")
    includes = 0
    for folder in sorted(graph):
        allowed = set(graph[folder]) | {folder}
        for path in source_files(root, folder):
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as file:
                for number, line in enumerate(file, 1):
                    match = INCLUDE.match(line)
                    if not match:
                        continue
                    includes += 1
                    target = f"{match.group(2)}/{match.group(3)}"
                    if target not in allowed:
                        problems.append(
                            f"{path}:{number}: {folder} includes {target} ({match.group(1)}), "
                            f"which {folder} does not link: {folder} may include "
                            f"{', '.join(sorted(allowed - {folder})) or 'no folder of common/ or tools/'}")
    return problems, includes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", required=True, help="layers.json, as CMake writes it")
    parser.add_argument("--source", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--quiet", action="store_true", help="say nothing when the layers hold")
    parser.add_argument("--table", action="store_true", help="print the graph as docs/design.md's table")
    parser.add_argument("--doc", help="a Markdown file that must hold the graph's table (--table) as it is")
    args = parser.parse_args()
    with open(args.graph, encoding="utf-8") as file:
        graph = json.load(file)
    if args.table:
        if find_circle(graph):
            print("check_layers: the declared graph has a circle; no floors to print", file=sys.stderr)
            return 1
        print(table(graph), end="")
        return 0
    problems, includes = check(graph, args.source)
    if args.doc and not problems:
        with open(args.doc, encoding="utf-8") as file:
            if table(graph) not in file.read():
                problems.append(f"{args.doc} does not hold the layers' table as the build declares them; "
                                "print it with --table")
    for problem in problems:
        print("check_layers: " + problem, file=sys.stderr)
    if problems:
        print(f"check_layers: {len(problems)} problem(s); the layers are declared in common/CMakeLists.txt and "
              "tools/CMakeLists.txt "
              "(see docs/design.md#code-layout)", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"check_layers: {includes} includes of {len(graph)} folders keep the declared layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
