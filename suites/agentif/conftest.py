"""AgentIF suites: task attachments (``environments/``) and reference deliverables (``reference/``) are
workspace content, not tests -- pytest must never collect the ``test_*.py`` files among them."""

collect_ignore_glob = ["environments/*", "reference/*"]
