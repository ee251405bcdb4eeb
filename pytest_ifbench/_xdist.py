"""pytest-xdist's worker-side plugin, the one piece of xdist's internals the plugin reads.

On a worker, xdist registers a ``WorkerInteractor``: it holds the queue of item indices handed to
the worker (``torun``, read by ``_plugin._newly_queued``) and sends every logged report to the
controller (left out of the hook for the checks ``_check_bundle`` carries)."""

from __future__ import annotations

from typing import Any

import pytest


def worker_interactor(config: pytest.Config) -> Any:
    """xdist's worker-side plugin, or None (not a worker, or an xdist without it).

    It registers without a name, and its module runs as execnet's ``__channelexec__`` (not importable
    as ``xdist.remote``), so it is found by its class name and its ``torun`` queue."""
    for plugin in config.pluginmanager.get_plugins():
        if type(plugin).__name__ == "WorkerInteractor" and hasattr(plugin, "torun"):
            return plugin
    return None
