"""Collectors: read a live cluster or a saved bundle into a Snapshot."""

from __future__ import annotations


class CollectError(Exception):
    """Nothing useful can be read: the message is one line for stderr."""

    exit_code = 2


class ClusterUnreachable(CollectError):
    """The API server cannot be reached or refuses the credentials."""

    exit_code = 3


class NamespaceNotFound(CollectError):
    """The namespace asked for does not exist (the message names the closest ones)."""

    exit_code = 2


class InputError(CollectError):
    """A kubeconfig, bundle or fixture that cannot be read."""

    exit_code = 2
