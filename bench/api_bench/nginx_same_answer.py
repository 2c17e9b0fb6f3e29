#!/usr/bin/env python3
"""Writes an nginx.conf whose `POST /rides` answers with the status, headers and body bytes of an
answer captured from the API (curl -D HEADERS -o BODY), for bench/api_bench.sh's "nginx same
replay bytes" rows: the cost of answering the same request with the same bytes and nothing else.

    nginx_same_answer.py HEADERS BODY PORT PREFIX    writes PREFIX/nginx.conf

nginx adds Date, Server, Content-Length and Connection itself (as the API does); Content-Type
comes from default_type; every other header of the captured answer is added verbatim. No access
log, one keep-alive connection for as many requests as wrk sends on it.
"""
import os
import sys

# Headers nginx writes itself, or that describe the connection rather than the answer.
OWN_HEADERS = {"date", "server", "content-length", "connection", "keep-alive", "transfer-encoding", "content-type"}


def quoted(text):
    """An nginx double-quoted string of exactly TEXT: nginx unescapes \\" and \\\\, and expands
    $name, so a literal '$' goes through a variable that holds one."""
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "${rr_dollar}")
    return '"' + out + '"'


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: nginx_same_answer.py HEADERS BODY PORT PREFIX")
    headers_path, body_path, port, prefix = sys.argv[1:]
    lines = open(headers_path, "rb").read().decode("latin-1").split("\r\n")
    status_line = lines[0].split(" ")
    if len(status_line) < 2 or not status_line[1].isdigit():
        sys.exit("nginx_same_answer.py: no status line in %s" % headers_path)
    status = status_line[1]
    content_type = None
    extra = []
    for line in lines[1:]:
        if not line:
            break
        name, _, value = line.partition(":")
        value = value.strip()
        if name.lower() == "content-type":
            content_type = value
        elif name.lower() not in OWN_HEADERS:
            extra.append((name, value))
    body = open(body_path, "rb").read()
    try:
        body_text = body.decode("utf-8")
    except UnicodeDecodeError:
        sys.exit("nginx_same_answer.py: the body is not UTF-8 text")
    if "\r" in body_text or "\0" in body_text:
        sys.exit("nginx_same_answer.py: the body holds CR or NUL, which an nginx string cannot carry exactly")

    conf = [
        "# Written by bench/api_bench/nginx_same_answer.py for one run of bench/api_bench.sh.",
        "worker_processes auto;",
        "pid %s/nginx.pid;" % prefix,
        "error_log %s/error.log warn;" % prefix,
        "events { worker_connections 4096; }",
        "http {",
        "  access_log off;",
        "  server_tokens off;",
        "  keepalive_requests 100000000;",
        "  keepalive_timeout 75s;",
        "  client_body_temp_path %s/client_body;" % prefix,
        '  geo $rr_dollar { default "$"; }',
        "  server {",
        "    listen 127.0.0.1:%s;" % port,
        "    location = /rides {",
        "      default_type %s;" % quoted(content_type or "text/plain"),
    ]
    for name, value in extra:
        conf.append("      add_header %s %s always;" % (quoted(name), quoted(value)))
    conf += [
        "      return %s %s;" % (status, quoted(body_text)),
        "    }",
        "  }",
        "}",
        "",
    ]
    os.makedirs(prefix, exist_ok=True)
    with open(os.path.join(prefix, "nginx.conf"), "w", encoding="utf-8") as f:
        f.write("\n".join(conf))


if __name__ == "__main__":
    main()
