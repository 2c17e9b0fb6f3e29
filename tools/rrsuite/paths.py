"""Where the repository and the scripts the package drives are."""

import os

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
LOCAL_SERVERS = os.path.join(REPO, "scripts", "local-servers.sh")
CLUSTER = os.path.join(REPO, "scripts", "cluster.sh")
