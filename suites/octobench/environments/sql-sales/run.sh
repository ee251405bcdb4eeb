#!/bin/sh
# run.sh QUERY.sql: load the CSV data into an in-memory SQLite database and run the query.
set -eu
sqlite3 -batch -header -csv :memory: \
    ".read schema.sql" \
    ".import --csv --skip 1 data/customers.csv customers" \
    ".import --csv --skip 1 data/orders.csv orders" \
    ".read $1"
