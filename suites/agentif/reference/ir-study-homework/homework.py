"""Homework 4: simple statistics without libraries."""


def summary_stats(values):
    """Return (mean, median) of a list of numbers; (None, None) for an empty list."""
    if not values:
        return None, None
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    median = ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return sum(ordered) / n, median


mean_and_median = summary_stats  # old name, kept for existing code
