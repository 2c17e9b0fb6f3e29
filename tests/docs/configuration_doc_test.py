#!/usr/bin/env python3
"""Keeps the documentation true to the code and to itself. Standard library only; no build needed.

  configuration_doc_test.py variables   docs/configuration.md documents every environment variable
                                        the binaries read, and nothing else
  configuration_doc_test.py links       every relative link in README.md and docs/**/*.md points at
                                        a file that exists, and an anchor into a Markdown file at a
                                        heading that exists
  configuration_doc_test.py             both

The variables the code reads are taken from the C++ sources of the binaries (the directories in
SOURCE_DIRS), where every read goes through rr::config::Environment (common/config/environment.hpp):
  - an accessor called on an Environment with a literal name, `env.seconds("STRIPE_TIMEOUT", ...)`,
    or with a constant defined in the same file, `constexpr const char* kVariable = "NAME";`;
  - a helper handed the Environment and a literal, `rate(env, "MOCK_DROP_RATE")`;
  - a prefix handed to a function that reads `prefix + "_SUFFIX"`, as config::LoopSettings::from_env
    does with ENQUEUER, COMPLETER and REAPER: every prefix with every suffix;
  - `ConfigError("NAME", ...)` and `getenv("NAME")`.
The documented ones are the table rows of docs/configuration.md that start with | `NAME` |.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE_DIRS = ["common", "api", "enqueuer", "completer", "reaper", "tools"]
# The Environment class itself reads whatever name it is given.
SKIP_FILES = {"common/config/environment.cpp", "common/config/environment.hpp"}
CONFIG_DOC = "docs/configuration.md"

NAME = r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*"
ACCESSORS = r"(?:get|required_string|string_or|integer|port|decimal|seconds|on_off|url)"


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def strip_comments(text):
    """Drops // line comments and /* */ blocks, keeping string literals (which may hold "//")."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def sources():
    for top in SOURCE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for name in sorted(files):
                if name.endswith((".cpp", ".hpp", ".h", ".cc")):
                    rel = os.path.relpath(os.path.join(dirpath, name), ROOT)
                    if rel not in SKIP_FILES:
                        yield rel, strip_comments(read(rel))


def code_variables():
    """{name: [files that read it]}"""
    files = list(sources())
    # Names of Environment objects (parameters and locals), and functions that take a prefix.
    env_names = {"env"}
    prefix_functions = set()
    suffixes = set()
    for _, text in files:
        env_names.update(re.findall(r"\bEnvironment\s*&?\s*(\w+)\s*[,)=;{]", text))
        for match in re.finditer(r"(\w+)\s*\(\s*const\s+(?:config::)?Environment\s*&\s*\w+\s*,\s*"
                                 r"const\s+std::string\s*&\s*prefix\b", text):
            prefix_functions.add(match.group(1))
        suffixes.update(re.findall(r"\b\w+\s*\.\s*" + ACCESSORS + r"\s*\(\s*prefix\s*\+\s*\"(_" + NAME + r")\"", text))
    env_alt = "|".join(sorted(re.escape(n) for n in env_names))

    found = {}

    def add(name, path):
        found.setdefault(name, []).append(path)

    for path, text in files:
        constants = dict(re.findall(r"\b(k\w+)\s*=\s*\"(" + NAME + r")\"\s*;", text))
        accessor = re.compile(r"\b(?:" + env_alt + r")\s*\.\s*" + ACCESSORS +
                              r"\s*\(\s*(?:\"(" + NAME + r")\"|(k\w+)\b)")
        for literal, constant in accessor.findall(text):
            if literal:
                add(literal, path)
            elif constant in constants:
                add(constants[constant], path)
        helper = re.compile(r"\b([\w:]+)\s*\(\s*(?:" + env_alt + r")\s*,\s*\"(" + NAME + r")\"")
        for function, literal in helper.findall(text):
            if function.split("::")[-1] in prefix_functions:
                for suffix in suffixes:
                    add(literal + suffix, path)
            else:
                add(literal, path)
        for literal in re.findall(r"\b(?:ConfigError|getenv)\s*\(\s*\"(" + NAME + r")\"", text):
            add(literal, path)
        for constant in re.findall(r"\bConfigError\s*\(\s*(k\w+)\b", text):
            if constant in constants:
                add(constants[constant], path)
    return found


def documented_variables():
    """{name: line number} of the rows | `NAME` | ... in docs/configuration.md."""
    rows = {}
    for number, line in enumerate(read(CONFIG_DOC).splitlines(), 1):
        match = re.match(r"\|\s*`(" + NAME + r")`\s*\|", line)
        if match:
            rows.setdefault(match.group(1), number)
    return rows


def check_variables():
    code = code_variables()
    doc = documented_variables()
    problems = []
    # The extraction must keep finding the reads it was written against: a refactoring that hides
    # them from it (a new accessor, names built another way) must fail here, not pass empty.
    for name in ["DATABASE_URL", "STRIPE_API_KEY", "API_MAX_CONNECTIONS", "MOCK_DROP_RATE",
                 "ENQUEUER_BATCH_SIZE", "REAPER_MAX_BACKOFF", "SIMULATOR_TOKEN"]:
        if name not in code:
            problems.append(f"the extraction no longer finds {name} in the sources: "
                            f"update {os.path.relpath(__file__, ROOT)} to the way the code reads variables")
    missing = sorted(set(code) - set(doc))
    extra = sorted(set(doc) - set(code))
    if missing:
        problems.append(f"read by the code but not documented in {CONFIG_DOC} "
                        f"(add a row | `NAME` | default | meaning |):")
        problems += [f"  {name}  (read in {', '.join(sorted(set(code[name])))})" for name in missing]
    if extra:
        problems.append(f"documented in {CONFIG_DOC} but read by no binary (remove the row, or, if the code "
                        f"that reads it is on a branch not merged yet, this fails until that branch merges):")
        problems += [f"  {name}  ({CONFIG_DOC}:{doc[name]})" for name in extra]
    if not problems:
        print(f"ok: {len(code)} variables read by the code, all documented in {CONFIG_DOC}, nothing else")
    return problems


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"`", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen, result = {}, set()
    in_code = False
    for line in read(path).splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        match = None if in_code else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            result.add(base if count == 0 else f"{base}-{count}")
    return result


def markdown_files():
    yield "README.md"
    for dirpath, _, files in os.walk(os.path.join(ROOT, "docs")):
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.relpath(os.path.join(dirpath, name), ROOT)


def check_links():
    problems = []
    count = 0
    for path in markdown_files():
        in_code = False
        for number, line in enumerate(read(path).splitlines(), 1):
            if line.lstrip().startswith("```"):
                in_code = not in_code
                continue
            if in_code:
                continue
            line = re.sub(r"``.*?``|`[^`]*`", "", line)
            for target in re.findall(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", line):
                if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
                    continue
                count += 1
                file_part, _, anchor = target.partition("#")
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                where = f"{path}:{number}: {target}"
                if not os.path.exists(os.path.join(ROOT, resolved)):
                    problems.append(f"{where}: no such file {resolved}")
                elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                    problems.append(f"{where}: no heading #{anchor} in {resolved}")
    if not problems:
        print(f"ok: {count} relative links in README.md and docs/, every target exists")
    return problems


def main(argv):
    checks = {"variables": check_variables, "links": check_links}
    chosen = argv[1:] or list(checks)
    problems = []
    for name in chosen:
        if name not in checks:
            print(f"usage: {argv[0]} [variables] [links]", file=sys.stderr)
            return 2
        problems += checks[name]()
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
