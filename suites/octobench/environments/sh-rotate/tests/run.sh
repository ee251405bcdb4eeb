#!/bin/sh
# Runs rotate.sh on a scratch directory; exits non-zero on the first failure.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
for i in 1 2 3 4 5; do
    touch -d "2024-01-0$i" "$tmp/app$i.log"
done
sh "$here/bin/rotate.sh" "$tmp" 3
left=$(ls "$tmp" | wc -l)
if [ "$left" -ne 3 ]; then
    echo "FAIL: expected 3 files left, found $left"
    exit 1
fi
for f in app3.log app4.log app5.log; do
    [ -e "$tmp/$f" ] || { echo "FAIL: $f was deleted"; exit 1; }
done
rm -f "$tmp"/*.log && rmdir "$tmp"
echo "PASS"
