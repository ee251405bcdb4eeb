"""Reporting: result records, metrics, the terminal summary, the summary file, Allure, baselines."""
