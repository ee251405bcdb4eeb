"""Small statistics helpers."""


def median(values: list[float]) -> float:
    """Return the median of a non-empty list."""
    ordered = sorted(values)
    return ordered[len(ordered) // 2]
