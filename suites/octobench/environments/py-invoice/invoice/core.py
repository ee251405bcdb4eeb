"""Invoice arithmetic. All amounts are integer cents."""


def line_total(quantity: int, unit_price_cents: int) -> int:
    """Return the total of one invoice line in cents."""
    return quantity * unit_price_cents


def apply_discount(total_cents: int, percent: int) -> int:
    """Return the total after a percentage discount, rounded half up to the cent."""
    return int(total_cents * (100 - percent) / 100)


def invoice_total(lines: list[tuple[int, int]], discount_percent: int = 0) -> int:
    """Return the invoice total in cents for (quantity, unit_price_cents) lines."""
    subtotal = sum(line_total(q, p) for q, p in lines)
    return apply_discount(subtotal, discount_percent)
