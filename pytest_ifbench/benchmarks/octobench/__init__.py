"""OctoBench: instruction following of coding agents under their real scaffolds (see docs/octobench.md)."""
