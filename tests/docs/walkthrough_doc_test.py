#!/usr/bin/env python3
"""Keeps docs/walkthrough.md true to the code it walks through. Standard library only; no build.

  walkthrough_doc_test.py [DOC]     DOC defaults to docs/walkthrough.md

The walkthrough names files and the functions to read in them. Two rules, each failing with the
line it read:
  - every backticked repository path exists: a token without spaces whose first component is a
    top-level folder of the repository, or whose name ends in a source or document extension
    (`common/http/listener.cpp`, `sql/functions/rides_create_with_key.sql`, `tests/fault/`);
  - every backticked name followed by "in", "from" or an opening parenthesis and a backticked
    path (`run_one_trip` in `common/db/one_trip_call.cpp`, `FlowRoute` (`common/api/flow_route.cpp`))
    is in that file, as a whole word; a qualified name (`ServerConnection::read_next`) needs each of its parts there.
A walkthrough that names too few of either has stopped being one, and fails too.
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_DOC = "docs/walkthrough.md"
EXTENSIONS = (".cpp", ".hpp", ".sql", ".md", ".py", ".sh", ".txt", ".yaml", ".json", ".cmake")
# Below these the page no longer walks through the code (today it names about 100 and 65).
MIN_PATHS = 40
MIN_NAMES_IN_FILES = 40

PATH_TOKEN = re.compile(r"^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.*-]+)*/?$")
NAME_IN_PATH = re.compile(r"`([A-Za-z_][A-Za-z0-9_:]*)(?:\(\))?` (?:in |from |\()`([^`\s]+)`")
BACKTICKED = re.compile(r"`([^`]+)`")


def top_level_folders():
    return {entry for entry in os.listdir(ROOT) if os.path.isdir(os.path.join(ROOT, entry))
            and not entry.startswith(".") and not entry.startswith("build")}


def looks_like_path(token, folders):
    if not PATH_TOKEN.match(token) or token.startswith("/"):
        return False
    first = token.split("/", 1)[0]
    return ("/" in token and first in folders) or token.endswith(EXTENSIONS)


def exists(path):
    """A path, or a pattern (`common/db/connection.*`) that some file matches."""
    return bool(glob.glob(os.path.join(ROOT, path.rstrip("/"))))


def code_lines(text):
    """The page's prose lines with their numbers, outside fenced code blocks (a shell example)."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def joined_paragraphs(text):
    """Prose lines joined per paragraph, so a name and its file may sit on two wrapped lines; each
    paragraph keeps the number of its first line."""
    paragraph, first = [], None
    for number, line in code_lines(text):
        if line.strip():
            if first is None:
                first = number
            paragraph.append(line.strip())
        elif paragraph:
            yield first, " ".join(paragraph)
            paragraph, first = [], None
    if paragraph:
        yield first, " ".join(paragraph)


def check(doc):
    with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
        text = f.read()
    folders = top_level_folders()
    failures, paths, names = [], 0, 0
    for number, paragraph in joined_paragraphs(text):
        for token in BACKTICKED.findall(paragraph):
            if looks_like_path(token, folders):
                paths += 1
                if not exists(token):
                    failures.append(f"{doc}:{number}: `{token}` does not exist")
        for name, path in NAME_IN_PATH.findall(paragraph):
            files = [f for f in glob.glob(os.path.join(ROOT, path)) if os.path.isfile(f)]
            if not looks_like_path(path, folders) or not files:
                continue  # reported above when it is a missing path
            names += 1
            source = ""
            for file in files:
                with open(file, encoding="utf-8") as f:
                    source += f.read()
            missing = [part for part in name.split("::") if part and not re.search(rf"\b{re.escape(part)}\b", source)]
            if missing:
                failures.append(f"{doc}:{number}: `{name}` is said to be in `{path}`, which has no {', '.join(missing)}")
    if paths < MIN_PATHS:
        failures.append(f"{doc}: names {paths} paths; a walkthrough names at least {MIN_PATHS}")
    if names < MIN_NAMES_IN_FILES:
        failures.append(f"{doc}: places {names} names in files; a walkthrough places at least {MIN_NAMES_IN_FILES}")
    return failures, paths, names


def main():
    doc = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DOC
    if not exists(doc):
        print(f"FAIL: {doc} does not exist")
        return 1
    failures, paths, names = check(doc)
    for failure in failures:
        print("FAIL: " + failure)
    if failures:
        return 1
    print(f"ok: {doc} names {paths} paths that exist and places {names} names in the files that hold them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
