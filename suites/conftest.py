"""The shipped suites: agent environments under ``environments/`` are workspace content, not tests."""

collect_ignore_glob = ["environments/*"]
