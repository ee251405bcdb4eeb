#!/bin/sh
# rotate.sh DIR KEEP: keep the KEEP newest *.log files in DIR, delete the others.
set -eu

dir=$1
keep=$2

count=0
for f in $(ls -t "$dir"/*.log 2>/dev/null); do
    count=$((count + 1))
    if [ "$count" -ge "$keep" ]; then
        rm -f "$f"
    fi
done
