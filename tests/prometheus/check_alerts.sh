#!/usr/bin/env bash
# deploy/prometheus-alerts.yml: valid rules (`promtool check rules`), alerts that fire on their
# failures and stay quiet otherwise (`promtool test rules alerts_test.yml`), and no metric name
# that the code does not export (a renamed metric would leave an alert that can never fire).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rules=$root/deploy/prometheus-alerts.yml

promtool check rules "$rules"
promtool test rules "$here/alerts_test.yml"

missing=0
for metric in $(grep -o 'rocket_rides_[a-z_]*' "$rules" | sort -u); do
  family=$metric
  for suffix in _bucket _count _sum; do family=${family%"$suffix"}; done
  # Registered as a string literal by the code that updates it (common/, the mains), or written
  # by the backup metrics textfile writer (scripts/backup_info.py).
  if ! grep -rqF "\"$family\"" "$root/common" "$root/api" "$root/enqueuer" "$root/completer" "$root/reaper" \
      "$root/scripts/backup_info.py"; then
    echo "FAIL: $rules uses $metric, but no code exports $family" >&2
    missing=$((missing + 1))
  fi
done
[ "$missing" -eq 0 ]
echo "alert rules: promtool check and test passed; every metric they use is exported"
