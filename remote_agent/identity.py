"""The version command: which agent answers, from which archive, on which Python, in which process."""
import hashlib
import os
import sys

from . import AGENT_VERSION
from .messages import VersionAnswer


def own_sha256():
    """The agent's archive is its identity: the host deploys by this hash."""
    archive = os.path.abspath(sys.argv[0])
    if not os.path.isfile(archive):
        return None
    with open(archive, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def version(_request):
    return VersionAnswer(version=AGENT_VERSION, sha256=own_sha256(), python="{}.{}.{}".format(*sys.version_info[:3]),
                         pid=os.getpid())
