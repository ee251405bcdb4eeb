"""The ``ifbench`` command, one module per subcommand."""
