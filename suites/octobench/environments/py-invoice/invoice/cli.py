"""Command line: python3 -m invoice.cli FILE.csv [--discount N]."""
import argparse
import csv

from invoice.core import invoice_total


def main(argv: list[str] | None = None) -> int:
    """Print the total of the invoice lines in a CSV file (quantity,unit_price_cents)."""
    parser = argparse.ArgumentParser(prog="invoice")
    parser.add_argument("file")
    parser.add_argument("--discount", type=int, default=0)
    args = parser.parse_args(argv)
    with open(args.file, newline="") as handle:
        lines = [(int(row["quantity"]), int(row["unit_price_cents"])) for row in csv.DictReader(handle)]
    cents = invoice_total(lines, args.discount)
    print(f"{cents // 100}.{cents % 100:02d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
