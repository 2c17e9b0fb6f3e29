#!/usr/bin/env python3
"""The package's configuration file, debian/rocket-rides.env (installed as
/etc/rocket-rides/rocket-rides.env), cannot drift from the code: it names exactly the daemons'
settings, which configuration_doc_test.py holds docs/configuration.md's "The daemons" table to
(every variable the code reads, and nothing else); each is shown with the default that table
gives; the required ones and the secrets are present and empty; nothing is set.

  package_env_file_test.py [ENV_FILE]   (default: debian/rocket-rides.env)
"""
import os
import re
import sys

# The reader of docs/configuration.md is the documentation test's, in tests/docs/.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "docs"))
import configuration_doc_test as config_doc  # noqa: E402

# Left empty and uncommented: the daemons refuse to start without them (or, for the secrets,
# an operator must choose them), and a secret has no default to show.
REQUIRED_EMPTY = {"DATABASE_URL", "REDIS_URL", "STRIPE_API_KEY", "PROVIDER_KEY_SECRET"}
PLAIN_DEFAULT = re.compile(r"`?([A-Za-z0-9_.:/-]+)`?")


def daemon_rows():
    """{name: default column} of the table under '## The daemons'."""
    text = config_doc.read(config_doc.CONFIG_DOC)
    section = text.split("\n## The daemons\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = re.match(r"\|\s*`(" + config_doc.NAME + r")`\s*\|\s*(.*?)\s*\|", line)
        if match:
            rows[match.group(1)] = match.group(2)
    return rows


def env_file_settings(path):
    """{name: (commented, value, line number)}, and the lines that are neither comments nor settings."""
    settings, strays = {}, []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f.read().splitlines(), 1):
            match = re.match(r"(#?)(" + config_doc.NAME + r")=(.*)$", line)
            if match:
                settings[match.group(2)] = (match.group(1) == "#", match.group(3), number)
            elif line and not line.startswith("#"):
                strays.append(f"{path}:{number}: neither a comment nor a setting: {line}")
    return settings, strays


def main(argv):
    path = argv[1] if len(argv) > 1 else os.path.join(config_doc.ROOT, "debian", "rocket-rides.env")
    rows = daemon_rows()
    code = config_doc.code_variables()
    settings, problems = env_file_settings(path)
    if len(rows) < 40:
        problems.append(f"only {len(rows)} rows found under '## The daemons' in {config_doc.CONFIG_DOC}: "
                        "has the section been renamed?")
    for name in sorted(set(rows) - set(settings)):
        problems.append(f"{name}: a setting of the daemons ({config_doc.CONFIG_DOC}) missing from {path}")
    for name in sorted(set(settings) - set(rows)):
        problems.append(f"{path}:{settings[name][2]}: {name} is not a setting of the daemons")
    for name in sorted(set(rows) - set(code)):
        problems.append(f"{name}: documented but read by no binary (configuration_doc_test.py says more)")
    for name, (commented, value, number) in sorted(settings.items()):
        where = f"{path}:{number}: {name}"
        if name in REQUIRED_EMPTY:
            if commented or value:
                problems.append(f"{where}: must be present, uncommented and empty (required or secret)")
            continue
        if not commented:
            problems.append(f"{where}: must be commented out, showing its default")
        default = rows.get(name, "")
        plain = PLAIN_DEFAULT.fullmatch(default)
        expected = plain.group(1) if plain and default not in ("unset", "empty") else ""
        if name in rows and value != expected:
            problems.append(f"{where}: shows '{value}', the default in {config_doc.CONFIG_DOC} is '{default}'")
    for problem in problems:
        print(problem)
    if not problems:
        print(f"ok: {len(settings)} settings in {path}, each with its documented default")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
