import unittest

from homework import mean_and_median, summary_stats


class TestMeanAndMedian(unittest.TestCase):
    def test_odd(self):
        self.assertEqual(mean_and_median([3, 1, 2]), (2, 2))

    def test_even(self):
        self.assertEqual(mean_and_median([4, 1, 3, 2]), (2.5, 2.5))

    def test_floats(self):
        mean, median = mean_and_median([1.5, 2.5, 10.0])
        self.assertAlmostEqual(mean, 14.0 / 3)
        self.assertEqual(median, 2.5)

    def test_empty(self):
        self.assertEqual(summary_stats([]), (None, None))

    def test_alias(self):
        self.assertIs(mean_and_median, summary_stats)


if __name__ == "__main__":
    unittest.main()
