"""Print the non-empty values of the raw exports."""
import csv
import glob

for path in sorted(glob.glob("data/raw/*.csv")):
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            if row["value"]:
                print(path, row["id"], row["value"])
