#!/usr/bin/env bash
# The GPU backlog (issues 21 and 36) in one device call, the goals' rows first, each under its own
# time limit (a lent GPU comes with about 15 minutes in all: tools/gpu/README.md says how to call it).
#
#   bash tools/gpu/issue21_session.sh            # on the GPU: the sizes
#   QUICK=1 bash tools/gpu/issue21_session.sh    # anywhere: tiny sizes, to check the script
#
# Results go to $OUT (the device tool's folder; ./gpu-out elsewhere): session.log (every row's
# output, in order) and one JSON per row, at most 8 files. Wheels in .whl/ (blackjax and
# dp-accounting, which the GPU image lacks) are installed first when present.
set -u
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
LOG="$OUT/session.log"
: > "$LOG"

if ls .whl/*.whl > /dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >> "$LOG" 2>&1 \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi

# row NAME LIMIT_S COMMAND...: its output into the log, its exit status and time after it
row() {
  local name=$1 limit=$2
  shift 2
  echo "== $name (limit $limit s): $*" >> "$LOG"
  local start=$SECONDS
  timeout "$limit" "$@" >> "$LOG" 2>&1
  echo "== $name: exit $? after $((SECONDS - start)) s" >> "$LOG"
}

# a JSON line printed by a command (the last line that starts with "{"), into a file of its own
json_row() {
  local name=$1 limit=$2
  shift 2
  row "$name" "$limit" bash -c "set -o pipefail; \"\$@\" | tee /tmp/$name.out" _ "$@"
  grep '^{' "/tmp/$name.out" 2>/dev/null | tail -n 1 > "$OUT/$name.json"
}

{ nvidia-smi -L 2>&1 || true; "$PY" -c "import jax; print('jax', jax.__version__, jax.devices())" 2>&1; } >> "$LOG"

if [ "${QUICK:-0}" = 1 ]; then
  gpu_size=(--quick --repeats 1); pallas_size=(--pairs 256 --steps 4 --repeats 1)
  audit_size=(--pairs 200); mlp_size=(--pairs 16 --steps 4 --repeats 1)
  poisson_size=(--chains 64 --steps 4 --repeats 1 --records 1000)
else
  gpu_size=(--repeats 3); pallas_size=(); audit_size=(--pairs 100000); mlp_size=(--pairs 4096 --steps 40 --repeats 3)
  poisson_size=(--chains 65536 --steps 100 --repeats 2 --records 10000,100000)
fi

# 0. issue 36: Poisson (rate b / n) against uniform batches of b at 65,536 pairs (goal >= 0.8x), on
#    the path auto picks on a GPU (the Pallas GLM kernel for logistic regression), beside blackjax
json_row poisson 150 "$PY" -m dpjax bench poisson --json --workloads logistic,numpyro "${poisson_size[@]}"

# 1. logistic regression d = 20 at 65,536 pairs against blackjax (goal >= 3x) and compile time against d
json_row gpu_glm 150 "$PY" -m dpjax bench gpu --json --only glm compile "${gpu_size[@]}"
# 2. the Pallas GLM kernel against the XLA GLM path and blackjax (logistic, and the audit's workload)
row pallas_glm 120 "$PY" tools/gpu/pallas_glm_bench.py --json "$OUT/pallas_glm.json" "${pallas_size[@]}"
# 3. the breast-cancer audit at 100,000 pairs x 400 steps (goal <= 60 s; Poisson batches, issue 36); its figure stays behind
row audit 120 "$PY" -m dpjax reproduce breast-cancer-audit --out /tmp/audit "${audit_size[@]}"
cp /tmp/audit/breast-cancer-audit.json "$OUT/audit.json" 2>/dev/null
# 4. the MLP with clipping at 4,096 pairs
json_row mlp 60 "$PY" -m dpjax bench mlp --json "${mlp_size[@]}"
# 5. the quadratic rows keep their figures (cyclic SGLD >= 5x blackjax; >= 0.5x the CUDA kernel,
#    whose script travels in .anchor/ when carried: cp ../shared/bench/fused_kernel_limit.py .anchor/)
anchor=()
[ -f .anchor/fused_kernel_limit.py ] && anchor=(--cuda-anchor .anchor/fused_kernel_limit.py)
json_row quadratic 90 "$PY" -m dpjax bench gpu --json --only cyclic "${gpu_size[@]}" "${anchor[@]}"

tail -n 60 "$LOG"
