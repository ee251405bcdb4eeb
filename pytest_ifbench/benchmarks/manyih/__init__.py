"""ManyIH-Bench: many-tier instruction hierarchies (see docs/manyih.md)."""
