#!/usr/bin/env python3
"""Replays each key of KEYS_FILE once, one after another on one keep-alive connection, as
POST /rides with the body the keys were created with; prints one machine-readable line:

    REPLAY_EACH sent=N s201=N other=N first_other=STATUS

bench/api_bench.sh sends it to an API process that has never seen these keys, so every answer
comes from the database (the "round trips per replay from the database" figure).

    replay_each.py HOST PORT TOKEN BODY KEYS_FILE
"""
import http.client
import sys


def main():
    if len(sys.argv) != 6:
        sys.exit("usage: replay_each.py HOST PORT TOKEN BODY KEYS_FILE")
    host, port, token, body, keys_path = sys.argv[1:]
    keys = [line.strip() for line in open(keys_path, encoding="ascii") if line.strip()]
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    sent = created = other = 0
    first_other = "-"
    for key in keys:
        connection.request("POST", "/rides", body=body, headers={
            "Authorization": "Bearer " + token,
            "Idempotency-Key": key,
            "Content-Type": "application/json",
        })
        response = connection.getresponse()
        response.read()
        sent += 1
        if response.status == 201:
            created += 1
        else:
            other += 1
            if first_other == "-":
                first_other = str(response.status)
    connection.close()
    print("REPLAY_EACH sent=%d s201=%d other=%d first_other=%s" % (sent, created, other, first_other))


if __name__ == "__main__":
    main()
