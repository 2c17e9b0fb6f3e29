"""`python3 -m rrsuite backup COMMAND ...`: backup.py's pgBackRest site for a script in bash that sets
up PostgreSQL itself (the crashed-leader test, tests/ha/crashed_leader_timeline_test.sh), so that the
configuration and the commands PostgreSQL runs are written once:

  write-config FILE REPO PG_PATH PG_PORT SOCKET_DIR WORK_DIR   pgBackRest's configuration FILE
                                   (backup.write_config: settings from BACKUP_* in the environment)
  archive-command CONFIG           PostgreSQL's archive_command through CONFIG, on stdout
  patroni-restore-command CONFIG PG_BIN_DIR   a Patroni node's restore_command, on stdout

RRSUITE_VOICE (the calling script's name) names the writer in the configuration's first line and
speaks its messages on stderr ("VOICE: ..."); a failure exits 1."""

import os
import sys

from . import backup
from .clusterdir import ClusterError, command_main


def say(message):
    print("%s: %s" % (os.environ.get("RRSUITE_VOICE") or "rrsuite backup", message), file=sys.stderr, flush=True)


def run(command, args):
    if command == "write-config" and len(args) == 6:
        writer = os.environ.get("RRSUITE_VOICE") or "rrsuite"
        backup.write_config(*args, writer=writer + ".sh" if writer != "rrsuite" else writer)
    elif command == "archive-command" and len(args) == 1:
        print(backup.archive_command(args[0]))
    elif command == "patroni-restore-command" and len(args) == 2:
        print(backup.patroni_restore_command(*args))
    else:
        raise ClusterError("unknown command or wrong arguments: %s" % " ".join([command] + args))


def main(argv):
    return command_main(argv, __doc__, run, say, operands=1)
