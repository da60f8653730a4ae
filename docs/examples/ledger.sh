#!/usr/bin/env bash
# The walk-through of docs/ledger.md on Adult: a steward makes a key, a ledger with one secret
# (income==>50K, budget 1.6 × μ of one release), registers 100 records and approves a DauM-G
# plan (ε = 0.5, n = 100); a releaser releases twice, the third is refused; a second sample of
# the population shares the secret's budget; a changed file and the same records re-expressed
# are stopped at the door; show, verify, backup. Run from anywhere:
#     bash docs/examples/ledger.sh [ADULT_DIR]
# (ADULT_DIR defaults to $DISTPRIVACY_SHARED/data/adult, else ../shared/data/adult beside the
# repository.)
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
adult=${1:-${DISTPRIVACY_SHARED:-$here/../shared}/data/adult}
adult=$(cd "$adult" && pwd) || exit 1
work=$(mktemp -d)
cd "$work" || exit 1
echo "# working in $work"
step() { echo; echo "\$ $*"; "$@"; echo "[exit status $?]"; }

echo "## the data owner calibrates and saves a plan"
step distprivacy calibrate --data "$adult" --subset-size 100 --mechanism DauM-G --epsilon 0.5 \
    --save plan.json
python3 - "$adult" <<'PY'
import sys
from distprivacy.datasets import load_data
from distprivacy.mechanisms.plans import Plan
adult = load_data(sys.argv[1])
a = adult.sample(n=100, random_state=1)
a.to_csv("records.csv", index=False)
adult.drop(a.index).sample(n=100, random_state=2).to_csv("other.csv", index=False)
# The same 100 records, education shuffled among them: every record changed, but age, fnlwgt
# and hours_per_week are the same values.
s = a.copy()
s["education"] = s["education"].sample(frac=1, random_state=3).to_numpy()
s.to_csv("reshuffled.csv", index=False)
plan = Plan.load("plan.json")
open("budget.txt", "w").write(f"{1.6 * plan.guarantee.mu:.4f}")
# Two plans edited and re-digested (the digest only catches accidents): the noise cut tenfold,
# and the θ means moved ten times closer (R2). The self-check refuses both.
import copy, json
import numpy as np
from distprivacy.mechanisms.plans import _digest
raw = json.load(open("plan.json"))
def save(d, name):
    d["digest"] = _digest({k: v for k, v in d.items() if k not in ("digest", "seal")})
    json.dump(d, open(name, "w"))
d = copy.deepcopy(raw)
c = d["calibration"]
c["noise"]["scales"] = [x / 10 for x in c["noise"]["scales"]]
c["noise_scales"] = [x / 10 for x in c["noise_scales"]]
c["noise_covariance"] = (np.asarray(c["noise_covariance"]) / 100).tolist()
save(d, "less-noise.json")
d = copy.deepcopy(raw)
means = np.asarray([t["mean"] for t in d["model"]["thetas"]], dtype=float)
centre = means.mean(axis=0)
for t, m in zip(d["model"]["thetas"], centre + (means - centre) / 10):
    t["mean"] = m.tolist()
save(d, "closer-means.json")
PY
chmod 600 less-noise.json closer-means.json

echo "## the steward"
step distprivacy ledger keygen steward.key
step distprivacy ledger init ledger.db --steward-key steward.key --secret income \
    --protect 'income==>50K' --population "$adult" --budget-mu "$(cat budget.txt)"
step distprivacy ledger register ledger.db wave1 --steward-key steward.key --data records.csv
step distprivacy ledger approve ledger.db plan.json --name means --steward-key steward.key
step distprivacy ledger approve ledger.db less-noise.json --name cheap --steward-key steward.key
step distprivacy ledger approve ledger.db closer-means.json --name closer --steward-key steward.key
step distprivacy ledger seal ledger.db plan.json

echo "## the releaser (ledger.db, ledger.db.key, ledger.db.anchor; no steward.key)"
for k in 1 2 3; do
    step distprivacy release --ledger ledger.db --dataset wave1 --plan means
done
step distprivacy release --ledger ledger.db --dataset wave1 --plan means --allow-exact
step distprivacy release --ledger ledger.db --dataset wave1 --plan means --target records.csv

echo "## another sample of the population: the same secret, the same budget"
step distprivacy ledger register ledger.db wave2 --steward-key steward.key --data other.csv
step distprivacy release --ledger ledger.db --dataset wave2 --plan means
step distprivacy ledger budget ledger.db --steward-key steward.key --budget-mu 0.45 \
    --reason "a second wave"
step distprivacy release --ledger ledger.db --dataset wave2 --plan means

echo "## the same records re-expressed, and a changed file"
step distprivacy ledger register ledger.db wave1b --steward-key steward.key --data reshuffled.csv
step distprivacy ledger register ledger.db wave1b --steward-key steward.key --data reshuffled.csv \
    --same-records-as wave1
python3 -c "import pandas as pd; d=pd.read_csv('other.csv'); d.loc[0,'age']+=1; d.to_csv('other.csv', index=False)"
step distprivacy release --ledger ledger.db --dataset wave2 --plan means
step distprivacy ledger register ledger.db wave2 --steward-key steward.key --data other.csv

echo "## show, verify, backup"
step distprivacy ledger show ledger.db
step distprivacy ledger verify ledger.db
step distprivacy ledger backup ledger.db copy.db
ls -l | awk '{print $1, $NF}'
