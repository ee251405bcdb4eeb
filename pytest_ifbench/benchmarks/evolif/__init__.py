"""EvolIF: multi-turn instruction following under a patience budget (see docs/evolif.md)."""
