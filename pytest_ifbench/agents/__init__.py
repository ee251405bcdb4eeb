"""Agent runs: workspaces, the tool loop, the recording proxy, real CLI runners, trajectories."""
