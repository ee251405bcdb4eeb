"""Homework 4: simple statistics without libraries."""


def mean_and_median(values):
    """Return (mean, median) of a list of numbers."""
    raise NotImplementedError
