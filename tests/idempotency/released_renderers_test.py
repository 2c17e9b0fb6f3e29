#!/usr/bin/env python3
"""Released stored-answer renderers are never edited in place.

Compares each file of tests/golden/released_renderers.sha256 with its committed checksum, and
checks that every renderer a migration registers (INSERT INTO stored_answer_renderers) names a
function whose file is in that list: a registered renderer is a released one.
"""
import hashlib
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2]
listing = root / "tests/golden/released_renderers.sha256"

released = {}
for line in listing.read_text().splitlines():
    if not line.strip() or line.startswith("#"):
        continue
    checksum, path = line.split(maxsplit=1)
    released[path.lstrip("*")] = checksum

failures = []
for path, checksum in sorted(released.items()):
    file = root / path
    if not file.is_file():
        failures.append(f"{path}: a released renderer's file is gone; keys finished with it could no longer replay")
        continue
    actual = hashlib.sha256(file.read_bytes()).hexdigest()
    if actual != checksum:
        failures.append(f"{path}: a released renderer was edited in place (sha256 {actual}, released {checksum}); "
                        "revert it and add the new rendering as a new version beside it (sql/019)")

registered = set()
for migration in sorted((root / "sql").glob("*.sql")):
    for block in re.findall(r"INSERT INTO stored_answer_renderers[^;]*;", migration.read_text(), re.S):
        registered.update(re.findall(r"'([a-z_][a-z0-9_]*_v\d+)'", block))
if not registered:
    failures.append("no migration registers a stored-answer renderer (INSERT INTO stored_answer_renderers)")
for function in sorted(registered):
    if f"sql/functions/{function}.sql" not in released:
        failures.append(f"renderer {function} is registered but sql/functions/{function}.sql is not in {listing.name}")

for failure in failures:
    print(failure)
print(f"{len(released)} released renderer files, {len(registered)} registered renderers, {len(failures)} problems")
sys.exit(1 if failures else 0)
