#!/bin/sh
# Checks the docs: every page in the nav exists, every page is in the nav,
# every page has exactly one H1, every fenced code block names a language.
set -eu
status=0
for page in $(sed -n 's/^ *- [^:]*: *\(.*\.md\) *$/\1/p' mkdocs.yml); do
    [ -f "docs/$page" ] || { echo "missing page: docs/$page"; status=1; }
done
for file in docs/*.md; do
    name=${file#docs/}
    grep -q ": *$name *\$" mkdocs.yml || { echo "not in nav: $file"; status=1; }
    h1=$(grep -c '^# ' "$file" || true)
    [ "$h1" -eq 1 ] || { echo "$file: $h1 H1 headings"; status=1; }
    bare=$(awk '/^```/{n++; if (n % 2 == 1 && $0 == "```") c++} END{print c+0}' "$file")
    [ "$bare" -eq 0 ] || { echo "$file: $bare code block(s) without a language"; status=1; }
done
[ "$status" -eq 0 ] && echo "docs OK"
exit "$status"
