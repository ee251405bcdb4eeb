"""AgentIF-OneDay: everyday agent tasks with attachments, graded by a per-task bonus/penalty rubric.

See ``docs/agentif.md``.
"""
