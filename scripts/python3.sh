# Sourced by the scripts that run tools/rrsuite: sets $python3 to Debian's interpreter, the one
# install-deps.sh installs packages for, rather than whatever "python3" PATH finds first (a pyenv
# shim there costs 0.3 s of CPU a call; docs/testing.md), or to plain python3 where it is missing.
# shellcheck shell=bash
python3=/usr/bin/python3
[ -x "$python3" ] || python3=python3
