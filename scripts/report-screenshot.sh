#!/usr/bin/env bash
# Renders the accuracy report in a real headless browser and saves a screenshot to look at.
#   scripts/report-screenshot.sh [report.html] [screenshot.png]
# Without a report it scores a small generated pairs file first. Needs Debian's chromium
# (apt-get install -y chromium); without it, says so and exits 0. Not part of the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

report=${1:-}
shot=${2:-/tmp/efsync-report.png}
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "chromium is not installed (apt-get install -y chromium): no screenshot taken"
  exit 0
fi

if [ -z "$report" ]; then
  work=$(mktemp -d)
  report="$work/report.html"
  # three days of an hourly sine with a slightly late forecast and a day-old, cloud-scaled persistence
  node -e '
    const rows = ["valid_time,issue_time,actual,forecast,reference,capacity,q10,q90"];
    const sun = (h) => Math.max(0, 800 * Math.sin(Math.PI * (h % 24 - 6) / 12));
    for (let h = 24; h < 24 * 4; h++) {
      const t = Date.UTC(2026, 5, 1) + h * 3600e3;
      const f = sun(h - 0.3) * (1 + 0.1 * Math.sin(h));
      rows.push([new Date(t).toISOString(), new Date(t - ((h % 12) + 1) * 3600e3).toISOString(),
        sun(h).toFixed(1), f.toFixed(1), (sun(h - 24) * (1 + 0.3 * Math.sin(h / 5))).toFixed(1), 1000, (0.8 * f).toFixed(1), (1.2 * f).toFixed(1)].join(","));
    }
    require("fs").writeFileSync(process.argv[1], rows.join("\n") + "\n");
  ' "$work/pairs.csv"
  node bin/efsync.js accuracy --pairs "$work/pairs.csv" --by total,lead,hour --report "$report" > /dev/null
fi

"$browser" --headless --no-sandbox --disable-gpu --disable-background-networking --hide-scrollbars \
  --screenshot="$shot" --window-size=1400,3000 "file://$(realpath "$report")" 2> /dev/null
echo "screenshot of $report: $shot"
