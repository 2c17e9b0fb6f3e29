#!/usr/bin/env python3
"""Every registered flow has the parts docs/design.md's checklist ("Adding a flow") lists.
Standard library only; no build needed: it reads the registry and the sources.

  flow_checklist_test.py [ROOT]     ROOT defaults to this checkout

The flows are the entries of kFlows in common/flows/flow_registry.cpp,
`RegisteredFlow{"name", "METHOD", "/path/{template}", ns::make_flow}`. For each one:
  1. its parameter reader: a `ParamsReader{"name", reader}` line in common/api/flow_params.cpp
     (the API also refuses to start without one), the reader declared in a header of
     common/api_requests/ and defined in a source file there;
  2. its SQL functions' files: the file that defines the flow's make function, the phase files
     beside it that define the phases and calls its table names (`*_phase`, `*_call`), and the
     statements headers (`*_statements.hpp`) those include; every function those headers call,
     by a db::Statement or a one-trip call's name, has its file sql/functions/<name>.sql that
     creates it (and at least one such function exists);
  3. its OpenAPI operation: the path template under `paths:` in docs/openapi.yaml with the
     method's operation, which takes the IdempotencyKey parameter;
  4. its documentation: a section `## METHOD /path/{template}` in docs/http-api.md.
It also fails when the checklist in docs/design.md no longer names these four places, so the doc
and this test describe the same recipe.
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REGISTRY = "common/flows/flow_registry.cpp"
READERS = "common/api/flow_params.cpp"
REQUEST_READERS_DIR = "common/api_requests"
SQL_FUNCTIONS_DIR = "sql/functions"
OPENAPI = "docs/openapi.yaml"
HTTP_DOC = "docs/http-api.md"
DESIGN_DOC = "docs/design.md"
CHECKLIST_HEADING = "## Adding a flow: the checklist"

REGISTERED_FLOW = re.compile(r'RegisteredFlow\{\s*"([^"]+)"\s*,\s*"([A-Z]+)"\s*,\s*"([^"]+)"\s*,\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*\}')
PARAMS_READER = re.compile(r'ParamsReader\{\s*"([^"]+)"\s*,\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*\}')
STATEMENT_NAME = re.compile(r'db::Statement\s+\w+\s*\{\s*"(\w+)"')
CALL_NAME = re.compile(r'constexpr\s+char\s+\w+\[\]\s*=\s*"(\w+)"')
STATEMENTS_INCLUDE = re.compile(r'#include\s+"(common/[\w/]+_statements\.hpp)"')
PHASE_OR_CALL = re.compile(r"\b(\w+_(?:phase|call))\s*\(")


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def sources_under(folder, extensions):
    for directory, _, files in os.walk(os.path.join(ROOT, folder)):
        for name in sorted(files):
            if name.endswith(extensions):
                yield os.path.relpath(os.path.join(directory, name), ROOT)


def defining_files(function, folder, extensions=(".cpp",)):
    """The files under `folder` that define `function`: a line that starts unindented (namespaces are
    not indented) with its return type and name, then its parameter list and a body. A call inside a
    function, even with a lambda's body after it, is indented."""
    definition = re.compile(rf"(?m)^[A-Za-z_][^\n;=(]*\b{re.escape(function)}\s*\([^;{{}}]*\)\s*(?:const\s*)?\{{")
    return [path for path in sources_under(folder, extensions) if definition.search(strip_comments(read(path)))]


def declares(function, folder):
    declaration = re.compile(rf"\b{re.escape(function)}\s*\(")
    return any(declaration.search(strip_comments(read(path))) for path in sources_under(folder, (".hpp",)))


def registered_flows():
    return [dict(name=m[0], method=m[1], path=m[2], make=m[3].split("::")[-1])
            for m in REGISTERED_FLOW.findall(strip_comments(read(REGISTRY)))]


def check_reader(flow, readers):
    reader = readers.get(flow["name"])
    if not reader:
        return [f"{flow['name']}: no ParamsReader{{\"{flow['name']}\", ...}} in {READERS}"]
    failures = []
    if not declares(reader, REQUEST_READERS_DIR):
        failures.append(f"{flow['name']}: its reader {reader} is declared in no header of {REQUEST_READERS_DIR}/")
    if not defining_files(reader, REQUEST_READERS_DIR):
        failures.append(f"{flow['name']}: its reader {reader} is defined in no source file of {REQUEST_READERS_DIR}/")
    return failures


def flow_sql_functions(flow):
    """The SQL functions the flow's phases call, from the statements headers its files include."""
    make_files = defining_files(flow["make"], "common")
    if len(make_files) != 1:
        return None, f"{flow['name']}: its make function {flow['make']} is defined in {len(make_files)} files of common/"
    make_file = make_files[0]
    folder = os.path.dirname(make_file)
    files = {make_file}
    for step in set(PHASE_OR_CALL.findall(strip_comments(read(make_file)))):
        files.update(defining_files(step, folder))
    headers = set()
    for path in files:
        headers.update(STATEMENTS_INCLUDE.findall(read(path)))
    functions = set()
    for header in headers:
        text = strip_comments(read(header))
        functions.update(STATEMENT_NAME.findall(text))
        functions.update(CALL_NAME.findall(text))
    if not functions:
        return None, (f"{flow['name']}: its phases ({', '.join(sorted(files))}) include no statements header "
                      f"(*_statements.hpp) naming a SQL function")
    return functions, None


def check_sql(flow):
    functions, failure = flow_sql_functions(flow)
    if failure:
        return [failure]
    failures = []
    for function in sorted(functions):
        path = f"{SQL_FUNCTIONS_DIR}/{function}.sql"
        if not os.path.isfile(os.path.join(ROOT, path)):
            failures.append(f"{flow['name']}: calls the SQL function {function}, which has no file {path}")
        elif not re.search(rf"FUNCTION\s+{re.escape(function)}\s*\(", read(path), re.I):
            failures.append(f"{flow['name']}: {path} does not create the function {function}")
    return failures


def openapi_operation(text, path, method):
    """The lines of the operation `method` under `path` in the `paths:` section, or None."""
    lines = text.splitlines()
    try:
        start = lines.index("paths:")
    except ValueError:
        return None
    in_path, operation = False, None
    for line in lines[start + 1:]:
        if line and not line.startswith(" "):
            break  # the next top-level section
        if re.match(r"^  \S", line):
            in_path = line.strip() == f"{path}:"
            if operation is not None:
                return operation
            continue
        if in_path and re.match(r"^    \S", line):
            if operation is not None:
                return operation
            if line.strip() == f"{method.lower()}:":
                operation = []
            continue
        if operation is not None:
            operation.append(line)
    return operation


def check_openapi(flow, openapi):
    operation = openapi_operation(openapi, flow["path"], flow["method"])
    if operation is None:
        return [f"{flow['name']}: no `{flow['method'].lower()}:` under `{flow['path']}:` in {OPENAPI}"]
    if not any("#/components/parameters/IdempotencyKey" in line for line in operation):
        return [f"{flow['name']}: its operation in {OPENAPI} does not take the IdempotencyKey parameter"]
    return []


def check_http_doc(flow, http_doc):
    heading = f"## {flow['method']} {flow['path']}"
    if not any(line.strip() == heading for line in http_doc.splitlines()):
        return [f"{flow['name']}: no section `{heading}` in {HTTP_DOC}"]
    return []


def check_design_checklist(design):
    section = design.split(CHECKLIST_HEADING, 1)
    if len(section) < 2:
        return [f"{DESIGN_DOC} has no section `{CHECKLIST_HEADING}`"]
    checklist = section[1].split("\n## ", 1)[0]
    return [f"{DESIGN_DOC}'s checklist does not name {place}"
            for place in (REGISTRY, READERS, REQUEST_READERS_DIR + "/", SQL_FUNCTIONS_DIR + "/", OPENAPI, HTTP_DOC,
                          "tests/flows/flow_checklist_test.py")
            if place not in checklist]


def main():
    flows = registered_flows()
    failures = []
    if len(flows) < 2:
        failures.append(f"read {len(flows)} flows from {REGISTRY}; the registry holds at least create_ride and cancel_ride")
    readers = dict(PARAMS_READER.findall(strip_comments(read(READERS))))
    openapi, http_doc = read(OPENAPI), read(HTTP_DOC)
    for flow in flows:
        failures += check_reader(flow, readers)
        failures += check_sql(flow)
        failures += check_openapi(flow, openapi)
        failures += check_http_doc(flow, http_doc)
    failures += check_design_checklist(read(DESIGN_DOC))
    for failure in failures:
        print("FAIL: " + failure)
    if failures:
        return 1
    for flow in flows:
        functions, _ = flow_sql_functions(flow)
        print(f"ok: {flow['name']} ({flow['method']} {flow['path']}): reader {readers[flow['name']]}, "
              f"SQL {', '.join(sorted(functions))}, OpenAPI, {HTTP_DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
