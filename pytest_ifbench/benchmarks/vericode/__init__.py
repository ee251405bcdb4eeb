"""VeriCode / Vibe Checker: verifiable code instructions (see docs/vericode.md)."""
