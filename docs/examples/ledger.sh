#!/usr/bin/env bash
# The numbers of docs/ledger.md, with a ledger of secrets (issue 30): a DauM-G plan at ε = 0.5
# on Adult (n = 100); the steward makes a key, declares the secret income (income==>50K, over
# the Adult population, budget (ε, δ) = (0.85, 0.001): room for two releases, not three — a μ
# budget would refuse the plan, whose fitted Gaussians are not μ-GDP), registers 100 records
# and approves the plan; a
# releaser releases them twice by name, the third release is refused; show and verify; then
# what is refused: a tampered plan, a target without a column, the old calls (seal, a plan
# file with --target). Run from anywhere: bash docs/examples/ledger.sh (the Adult data is
# fetched and cached on first use, or set DISTPRIVACY_DATA). Exits 0 when every step did what
# it should.
set -u
work=$(mktemp -d)
cd "$work" || exit 1
echo "# working in $work"
failed=0
expect() {  # expect STATUS COMMAND...: run it, print its exit status, count a surprise
    local want=$1
    shift
    "$@"
    local got=$?
    echo "exit status $got"
    if [ "$got" -ne "$want" ]; then
        echo "# UNEXPECTED: wanted exit status $want" >&2
        failed=1
    fi
}
distprivacy calibrate --subset-size 100 --mechanism DauM-G --epsilon 0.5 --save plan.json \
    | tail -n 2
python3 - <<'PY'
import distprivacy as dp
from distprivacy.mechanisms.plans import Plan
dp.load_adult().sample(n=100, random_state=1).to_csv("records.csv", index=False)
plan = Plan.load("plan.json")
print("plan:", plan)
PY
population=${DISTPRIVACY_DATA:-adult}
echo "# the steward"
expect 0 distprivacy ledger keygen steward.key
expect 0 distprivacy ledger init ledger.db --steward-key steward.key --secret income \
    --protect 'income==>50K' --population "$population" --budget-epsilon 0.85 --budget-delta 0.001
expect 0 distprivacy ledger register ledger.db wave1 --steward-key steward.key --data records.csv
expect 0 distprivacy ledger approve ledger.db plan.json --name means --steward-key steward.key
echo "# the releaser (no key of the steward's, no file handed in)"
for k in 1 2 3; do
    echo "# release $k"
    out=$(distprivacy release --ledger ledger.db --dataset wave1 --plan means --json)
    status=$?
    if [ "$status" -eq 0 ]; then
        echo "$out" | python3 -c "import json,sys; c=json.load(sys.stdin)['ledger']['cumulative']; print({k: c[k] for k in ('mu', 'epsilon', 'delta', 'max_attack_accuracy')})"
    fi
    echo "exit status $status"
    want=0
    [ "$k" -eq 3 ] && want=2
    if [ "$status" -ne "$want" ]; then
        echo "# UNEXPECTED: wanted exit status $want" >&2
        failed=1
    fi
done
distprivacy ledger show ledger.db --json | python3 -c \
    "import json,sys; d=json.load(sys.stdin); c=d['cumulative'][0]; print(len(d['releases']), 'releases of secret', c['secret'] + ';', {k: c[k] for k in ('mu', 'epsilon', 'at_delta', 'max_attack_accuracy', 'within_budget')})"
expect 0 distprivacy ledger verify ledger.db
echo "# a tampered plan"
python3 -c "import json; p=json.load(open('plan.json')); p['calibration']['noise_scales']=[s/10 for s in p['calibration']['noise_scales']]; json.dump(p, open('tampered.json','w'))"
expect 2 distprivacy release --plan tampered.json --target records.csv
expect 2 distprivacy ledger approve ledger.db tampered.json --name fewer --steward-key steward.key
echo "# a target without the column age"
python3 -c "import pandas as pd; pd.read_csv('records.csv').drop(columns=['age']).to_csv('short.csv', index=False)"
expect 2 distprivacy release --plan plan.json --target short.csv
echo "# the old (schema 2) calls"
expect 2 distprivacy ledger seal ledger.db plan.json
expect 2 distprivacy release --plan plan.json --target records.csv --ledger ledger.db
exit "$failed"
