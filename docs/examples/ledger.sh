#!/usr/bin/env bash
# The numbers of docs/ledger.md: a DauM-G plan at ε = 0.5 on Adult (n = 100), two releases of
# the same 100 records recorded in a ledger with budget 1.6 × μ, a third refused, a tampered plan
# and a target without a column refused. Run from anywhere: bash docs/examples/ledger.sh
# (the Adult data is fetched and cached on first use, or set DISTPRIVACY_DATA).
set -u
work=$(mktemp -d)
cd "$work" || exit 1
echo "# working in $work"
distprivacy calibrate --subset-size 100 --mechanism DauM-G --epsilon 0.5 --save plan.json \
    | tail -n 2
python3 - <<'PY'
import distprivacy as dp
from distprivacy.mechanisms.plans import Plan
dp.load_adult().sample(n=100, random_state=1).to_csv("records.csv", index=False)
plan = Plan.load("plan.json")
print("plan:", plan)
open("budget.txt", "w").write(repr(1.6 * plan.guarantee.mu))
PY
distprivacy ledger init ledger.db --budget-mu "$(cat budget.txt)"
distprivacy ledger seal ledger.db plan.json
for k in 1 2 3; do
    echo "# release $k"
    out=$(distprivacy release --plan plan.json --target records.csv --ledger ledger.db --json)
    status=$?
    if [ "$status" -eq 0 ]; then
        echo "$out" | python3 -c "import json,sys; c=json.load(sys.stdin)['ledger']['cumulative']; print({k: c[k] for k in ('mu', 'epsilon', 'delta', 'max_attack_accuracy')})"
    fi
    echo "exit status $status"
done
distprivacy ledger show ledger.db --json | python3 -c \
    "import json,sys; d=json.load(sys.stdin); c=d['cumulative'][0]; print(len(d['releases']), 'releases;', {k: c[k] for k in ('mu', 'epsilon', 'at_delta', 'max_attack_accuracy', 'within_budget')})"
distprivacy ledger verify ledger.db; echo "exit status $?"
echo "# a tampered plan"
python3 -c "import json; p=json.load(open('plan.json')); p['calibration']['noise_scales']=[s/10 for s in p['calibration']['noise_scales']]; json.dump(p, open('tampered.json','w'))"
distprivacy release --plan tampered.json --target records.csv; echo "exit status $?"
echo "# a target without the column age"
python3 -c "import pandas as pd; pd.read_csv('records.csv').drop(columns=['age']).to_csv('short.csv', index=False)"
distprivacy release --plan plan.json --target short.csv; echo "exit status $?"
