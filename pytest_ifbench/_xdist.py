"""The pieces of pytest-xdist's internals the plugin reads.

On a worker, xdist registers a ``WorkerInteractor``: it holds the queue of item indices handed to
the worker (``torun``, read by ``_plugin._newly_queued``) and sends every logged report to the
controller (left out of the hook for the checks ``_check_bundle`` carries).

On the controller, a worker's ``WorkerController`` (the ``node`` of ``pytest_configure_node``) tells
whether the worker's session is over (:func:`worker_done`): a stopped controller waits for that before
its teardown (``_termination``)."""

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


def worker_done(node: Any) -> bool:
    """Whether the worker of xdist's ``node`` (a ``WorkerController``) is done: its session finished, or it is
    gone. xdist sets ``workeroutput`` as the worker's ``workerfinished`` arrives, ``_down`` then too or as its
    channel ends (the worker died), both in execnet's receiver thread: they hold once the controller's loop no
    longer takes events (an interrupted run). A node that never got a channel never started a session."""
    if hasattr(node, "workeroutput") or getattr(node, "_down", False):
        return True
    channel = getattr(node, "channel", None)
    return channel is None or bool(channel.isclosed())
