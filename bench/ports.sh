# Sourced by the benchmarks: loopback ports for the servers they start.
# shellcheck shell=bash

# A free port below the kernel's ephemeral range (like scripts/local-servers.sh), so an outgoing
# connection cannot take it between this check and the server's bind.
pick_port() {
  local port low=10000 high
  high=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  for _ in $(seq 1 100); do
    port=$((low + RANDOM % (high - low)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return 0; fi
  done
  return 1
}

# Waits up to 10 s for something to listen on port $1.
wait_port() {
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "$(basename "$0"): nothing listens on port $1" >&2
  return 1
}
