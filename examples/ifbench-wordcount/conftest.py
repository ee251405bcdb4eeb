"""This folder is a benchmark package, not a test directory.

``pytest examples/`` (and anything else that walks into this folder) must not
collect the package's suite: it needs the package installed. Name the suite
explicitly to run it: ``pytest examples/ifbench-wordcount/suites/wordcount.yaml``.
This file is not part of the installed package.
"""

collect_ignore = ["suites", "replies.jsonl"]
