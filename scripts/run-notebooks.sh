#!/usr/bin/env bash
# Execute the notebooks headless (Debian's /usr/bin/python3 and jupyter nbconvert) on fresh data: two sweeps and a
# simulator-against-emulator comparison, written to notebooks/data/; the notebooks write their PNGs to
# notebooks/out/. The same PNGs without Jupyter: scripts/plot.py. About a minute on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
[ -x build/tensorpath ] || scripts/build.sh
mkdir -p notebooks/data notebooks/out
build/tensorpath sweep scenarios/sweeps/transfer-nic-transport.json --out notebooks/data/transfer.rows.jsonl -j 2 -q
build/tensorpath sweep scenarios/sweeps/notebook-training.json --out notebooks/data/training.rows.jsonl -j 2 -q
build/tensorpath emulate --compare --allow-disturbed-calibration --sweep --steps 3 --json notebooks/data/sim_vs_emu.json > notebooks/data/sim_vs_emu.txt
for nb in notebooks/*.ipynb; do
  ( cd notebooks && jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=300 \
      --output-dir out "$(basename "$nb")" )
done
missing=0
for png in transfer_bandwidth training_step_time training_scaling training_breakdown sim_vs_emu_error; do
  if [ -s "notebooks/out/$png.png" ]; then echo "notebooks: wrote notebooks/out/$png.png"; else echo "notebooks: $png.png missing" >&2; missing=1; fi
done
exit $missing
