"""The fixture files under data/ are inputs of the tests, not suites to collect."""

collect_ignore = ["data"]
