"""The open-file limit: each connection is a file descriptor."""

import resource

from squall.cli import UsageError

# Descriptors the process needs besides connections: the interpreter, epoll, eventfds, pipes, files.
OVERHEAD = 64


def ensure_open_files(connections: int) -> None:
    """Raises the soft limit as far as the hard limit allows, or explains why the run cannot start."""
    need = connections + OVERHEAD
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return
    if hard != resource.RLIM_INFINITY and hard < need:
        raise UsageError(
            f"{connections} connections need about {need} open files, but the limit is {hard} "
            f"(raise it with 'ulimit -n {need}' as root, or use fewer connections)"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (need if hard == resource.RLIM_INFINITY else hard, hard))
