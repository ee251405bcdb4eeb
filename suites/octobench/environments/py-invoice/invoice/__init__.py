"""Tiny invoicing library: money is always integer cents."""
