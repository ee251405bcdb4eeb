"""OctoBench-style suites: ``environments/`` holds agent workspace content, not tests."""

collect_ignore_glob = ["environments/*"]
