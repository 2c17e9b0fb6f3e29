#!/usr/bin/env python3
"""The layers checker can fail: scripts/check_layers.py run over a copy of the tree in
which one thing breaks the layers must refuse it, naming what broke them; the untouched copy passes.

  layers_test.py --graph BUILD/layers.json

  - an upward include: common/rides/ride_flow.cpp includes the API's endpoint header;
  - an include of a folder reached only through another: the same file includes common/http,
    which common/rides reaches only through common/payments;
  - production code reaching a test tool: the same file includes the stand-in provider
    (tools/stripe_mock), which no folder of common/ links;
  - a circle in the declared graph: common/base made to link common/http, which links it;
  - a folder of common/ or tools/ with C++ files and no library.
Standard library only.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKER = os.path.join(ROOT, "scripts", "check_layers.py")
failures = []


def run_checker(graph_path, source):
    return subprocess.run([sys.executable, CHECKER, "--graph", graph_path, "--source", source],
                          capture_output=True, text=True, check=False)


def expect(name, result, fails, *words):
    if (result.returncode != 0) != fails or not all(word in result.stderr + result.stdout for word in words):
        failures.append(f"{name}: exit {result.returncode}, wanted {'failure' if fails else 'success'} "
                        f"naming {words}; output:\n{result.stdout}{result.stderr}")
    else:
        print(f"ok: {name}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--graph", required=True)
    args = parser.parse_args()
    with open(args.graph, encoding="utf-8") as file:
        graph = json.load(file)

    with tempfile.TemporaryDirectory() as scratch:
        tree = os.path.join(scratch, "tree")
        for folder in {folder.split("/")[0] for folder in graph}:
            shutil.copytree(os.path.join(ROOT, folder), os.path.join(tree, folder))
        graph_path = os.path.join(scratch, "layers.json")

        def write_graph(g):
            with open(graph_path, "w", encoding="utf-8") as file:
                json.dump(g, file)

        write_graph(graph)
        expect("the tree as it is keeps its layers", run_checker(graph_path, tree), False)

        # One include back up: the ride flow reaching for the API's endpoints.
        victim = os.path.join(tree, "common", "rides", "ride_flow.cpp")
        with open(victim, encoding="utf-8") as file:
            lines = file.readlines()
        at = next(i for i, line in enumerate(lines) if line.startswith("#include")) + 1
        lines.insert(at, '#include "common/api/endpoint.hpp"\n')
        with open(victim, "w", encoding="utf-8") as file:
            file.writelines(lines)
        expect("an upward include fails, naming file, line and both folders", run_checker(graph_path, tree), True,
               f"common/rides/ride_flow.cpp:{at + 1}:", "common/rides includes common/api")
        # One include of a folder reached only through another: the flows link the provider, which
        # links HTTP, and still may not name HTTP themselves.
        lines[at] = '#include "common/http/message.hpp"\n'
        with open(victim, "w", encoding="utf-8") as file:
            file.writelines(lines)
        expect("an include of a folder linked only through another fails", run_checker(graph_path, tree), True,
               f"common/rides/ride_flow.cpp:{at + 1}:", "common/rides includes common/http")
        # Production code reaching a test tool: the flows naming the stand-in provider.
        lines[at] = '#include "tools/stripe_mock/mock.hpp"\n'
        with open(victim, "w", encoding="utf-8") as file:
            file.writelines(lines)
        expect("an include of a test tool from common/ fails", run_checker(graph_path, tree), True,
               f"common/rides/ride_flow.cpp:{at + 1}:", "common/rides includes tools/stripe_mock")
        lines.pop(at)
        with open(victim, "w", encoding="utf-8") as file:
            file.writelines(lines)

        # A circle declared in the graph: base linking http, which links base.
        circular = dict(graph)
        circular["common/base"] = graph["common/base"] + ["common/http"]
        write_graph(circular)
        expect("a circle in the declared graph fails", run_checker(graph_path, tree), True, "circle",
               "common/base -> common/http -> common/base")
        write_graph(graph)

        # A new folder nobody declared.
        os.makedirs(os.path.join(tree, "common", "orphan"))
        with open(os.path.join(tree, "common", "orphan", "orphan.cpp"), "w", encoding="utf-8") as file:
            file.write('#include "common/base/log.hpp"\n')
        expect("a folder without a library fails", run_checker(graph_path, tree), True, "common/orphan", "no library")
        shutil.rmtree(os.path.join(tree, "common", "orphan"))
        os.makedirs(os.path.join(tree, "tools", "orphan_tool"))
        with open(os.path.join(tree, "tools", "orphan_tool", "main.cpp"), "w", encoding="utf-8") as file:
            file.write('#include "common/base/log.hpp"\n')
        expect("a tool folder without a library fails", run_checker(graph_path, tree), True, "tools/orphan_tool",
               "no library", "tools/CMakeLists.txt")

    for failure in failures:
        print("FAILED " + failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
