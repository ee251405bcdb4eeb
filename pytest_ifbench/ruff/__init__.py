"""Ruff-backed checks: one reply (check), many replies in one process (batch), rule expansions kept on disk."""
