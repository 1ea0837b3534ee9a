"""Opening a target: the transport its inventory entry asks for. Above the transports (``ssh``, ``local``,
``become``), so that none of them imports another's module to be opened."""
from __future__ import annotations

from ..inventory.hosts import Host
from .become import BecomeTransport
from .local import LocalTransport
from .settings import ConnectOptions
from .ssh import SSHTransport
from .transport import Transport


def open_transport(host: Host, options: ConnectOptions) -> Transport:
    """The target as its inventory entry says: this machine or SSH, and through sudo with ansible_become."""
    inner: Transport = LocalTransport() if host.is_local else SSHTransport(host, options)
    if not host.become:
        return inner
    try:
        # as Ansible: the inventory's (vaulted) become password wins over the one given at the prompt
        return BecomeTransport(inner, host.become_user, host.become_password or options.become_password)
    except BaseException:
        inner.close()
        raise
