import unittest

from invoice.core import apply_discount, invoice_total, line_total


class CoreTests(unittest.TestCase):
    def test_line_total(self):
        self.assertEqual(line_total(3, 250), 750)

    def test_no_discount(self):
        self.assertEqual(invoice_total([(1, 999), (2, 1)]), 1001)

    def test_discount_rounds_half_up(self):
        # 10% off 1005 cents is 904.5 cents: half a cent rounds up.
        self.assertEqual(apply_discount(1005, 10), 905)

    def test_discount_on_total(self):
        self.assertEqual(invoice_total([(3, 335)], 15), 854)


if __name__ == "__main__":
    unittest.main()
