#!/usr/bin/env bash
# Proof that the Allure integration reads well in a real report:
#   1. runs suites/smoke.yaml on 2 xdist workers against the local stub server, scripted so
#      that some checks fail, one judge says "fail" and one instance errors (HTTP 503);
#   2. generates the HTML report with Allure 3 (`npx allure generate`, from the npm registry);
#   3. opens the page of the failed instance `add-function` in headless Chromium, checks that it
#      shows the failed step `line-length` (status failed) with its ruff evidence, and
#   4. saves a screenshot of that page to docs/allure-report.png.
#
# Needs: this project installed (pip install -e .), node/npx, chromium
# (Debian: apt-get update && apt-get install -y chromium). Nothing here is part of the test suite.
#
# Usage: bash docs/render_allure_report.sh [SCREENSHOT.png]      (run from anywhere)
# Env:   ALLURE_VERSION (default 3.18.0)  CHROMIUM (default: chromium)  KEEP=1 keeps the work dir
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHOT="$(realpath -m "${1:-$ROOT/docs/allure-report.png}")"
ALLURE_VERSION="${ALLURE_VERSION:-3.18.0}"
CHROMIUM="${CHROMIUM:-chromium}"
PYTHON="${PYTHON:-python3}"
WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    if [[ -z "${KEEP:-}" ]]; then rm -rf "$WORK"; else echo "work dir kept: $WORK"; fi
}
trap cleanup EXIT

command -v npx >/dev/null || { echo "needs npx (Node.js)" >&2; exit 2; }
command -v "$CHROMIUM" >/dev/null || { echo "needs chromium: apt-get install -y chromium" >&2; exit 2; }

# -- 1. the stub model: scripted replies (the judge rule must come first: its prompt quotes the task)
cat > "$WORK/script.json" <<'EOF'
{
  "rules": [
    {"match": "^TASK GIVEN TO THE MODEL", "reply": "{\"checks\": [{\"id\": \"polite\", \"verdict\": \"pass\", \"reasoning\": \"Courteous and apologetic throughout.\"}, {\"id\": \"offers-credit\", \"verdict\": \"fail\", \"reasoning\": \"The reply declines the refund but never mentions store credit.\"}, {\"id\": \"three-stops\", \"verdict\": \"pass\", \"reasoning\": \"Exactly three stops are listed.\"}, {\"id\": \"lunch\", \"verdict\": \"pass\", \"reasoning\": \"Lunch at the market hall is planned.\"}]}"},
    {"match": "greeting", "reply": "welcome aboard, we are so glad to have you on the team!"},
    {"match": "lost cat", "reply": "Dear neighbour, our grey cat Milo has been missing since Tuesday. Please call us if you see him."},
    {"match": "fictional book", "reply": "{\"title\": \"The Glass Orchard\", \"author\": \"Mara Quill\"}"},
    {"match": "function `add", "reply": "Here is the function:\n\n```python\nimport os\n\n\ndef add(a, b):\n    \"\"\"Return the sum of a and b; works for ints and floats alike, and for mixtures of both.\"\"\"\n    return a + b\n```\n"},
    {"match": "standard input", "reply": "```python\nprint(input().upper())\n```"},
    {"match": "refund", "reply": "Thank you for reaching out, and I am sorry for the trouble. Unfortunately our 30-day refund window has passed, so we cannot refund this order."},
    {"match": "walking tour", "reply": "Morning: the old harbour. Noon: lunch at the market hall. Afternoon: the cathedral, then the castle gardens at sunset."},
    {"match": "haiku about autumn", "reply": "Autumn leaves drifting\nacross the quiet river\ngold light on the stones"},
    {"match": "upper case", "reply": "AUTUMN LEAVES DRIFTING\nACROSS THE QUIET RIVER\nGOLD LIGHT ON THE STONES"},
    {"match": "Name a colour", "reply": "Blue"},
    {"match": "Name an animal", "reply": "A very large grey elephant"}
  ],
  "faults": [
    {"kind": "status", "status": 503, "message": "the upstream model is overloaded", "match": "three fruits"},
    {"kind": "status", "status": 503, "message": "the upstream model is overloaded", "match": "three fruits"}
  ]
}
EOF
"$PYTHON" -m pytest_ifbench.testing --script "$WORK/script.json" --url-file "$WORK/url" >/dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [[ -s "$WORK/url" ]] && break; sleep 0.1; done
URL="$(cat "$WORK/url")"

# -- 2. the run: failures are expected, so pytest's exit status 1 is fine
RESULTS="$WORK/allure-results"
set +e
(cd "$ROOT" && OPENAI_API_KEY=sk-render-demo-not-a-real-key "$PYTHON" -m pytest suites/smoke.yaml -n 2 \
    --model=openai/stub --api-base="$URL" --ifbench-no-cache --ifbench-max-attempts=2 --ifbench-max-wait=1 \
    --ifbench-results="$WORK/ifbench-results.json" -p no:cacheprovider \
    --alluredir="$RESULTS" --clean-alluredir -q)
status=$?
set -e
[[ $status -le 1 ]] || { echo "pytest exited with $status" >&2; exit 1; }
if grep -rq "sk-render-demo" "$RESULTS"; then echo "an API key reached the Allure results" >&2; exit 1; fi

# -- 3. the HTML report (Allure 3 reads the categories from its config, written next to the results)
npx --yes "allure@$ALLURE_VERSION" generate --config "$RESULTS/allurerc.json" "$RESULTS" -o "$WORK/report" \
    2>&1 | grep -v "npm warn" || true
[[ -f "$WORK/report/index.html" ]] || { echo "allure generate wrote no report" >&2; exit 1; }

PORT="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$PYTHON" -m http.server "$PORT" --bind 127.0.0.1 --directory "$WORK/report" >/dev/null 2>&1 &
PIDS+=($!)
sleep 1
ID="$("$PYTHON" - "$WORK/report" <<'EOF'
import json, pathlib, sys
for path in pathlib.Path(sys.argv[1], "data", "test-results").glob("*.json"):
    data = json.loads(path.read_text())
    if data.get("name") == "add-function":
        print(data["id"])
        break
else:
    sys.exit("add-function is not in the report")
EOF
)"
PAGE="http://127.0.0.1:$PORT/index.html#$ID"
BROWSER=("$CHROMIUM" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=10000)

# -- 4. the page must show the failed step with its evidence
"${BROWSER[@]}" --dump-dom "$PAGE" 2>/dev/null > "$WORK/page.html"
"$PYTHON" - "$WORK/page.html" <<'EOF'
import sys
from html.parser import HTMLParser

class Steps(HTMLParser):
    """Collects (status, title) of every step header, and the page's text."""
    def __init__(self):
        super().__init__()
        self.steps, self.text, self.status, self.in_title = [], [], None, False
    def handle_starttag(self, tag, attrs):
        testid = dict(attrs).get("data-testid") or ""
        if testid.startswith("tree-leaf-status-"):
            self.status = testid.removeprefix("tree-leaf-status-")
        self.in_title = testid == "test-result-step-title"
    def handle_data(self, data):
        self.text.append(data)
        if self.in_title:
            self.steps.append((self.status, data.strip()))
            self.in_title = False

page = Steps()
page.feed(open(sys.argv[1], encoding="utf-8").read())
text = "\n".join(page.text)
for status, title in page.steps:
    print(f"  step [{status}] {title}")
failed = [t for s, t in page.steps if s == "failed" and t.startswith("line-length")]
assert failed, "the page does not show line-length as a failed step"
assert "E501 Line too long" in text, "the failed step's evidence is not on the page"
assert any(s == "passed" and t.startswith("tests-pass") for s, t in page.steps), "passing step missing"
assert "Category: Check failed" in text, "the instance is not in the 'Check failed' category"
print("ok: the page shows the failed step line-length with its evidence")
EOF

mkdir -p "$(dirname "$SHOT")"
"${BROWSER[@]}" --window-size=1280,1700 --screenshot="$SHOT" "$PAGE" 2>/dev/null >/dev/null
echo "screenshot: $SHOT"
