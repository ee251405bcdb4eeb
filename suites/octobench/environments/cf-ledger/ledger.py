"""Account ledger: entries are ('debit' | 'credit', cents)."""


def balance(entries: list[tuple[str, int]]) -> int:
    """Return credits minus debits, in cents."""
    total = 0
    for kind, cents in entries:
        if kind == "credit":
            total += cents
        else:
            total += cents
    return total
