#!/usr/bin/env bash
# The hostile-and-everyday input probe of issue 13, as a script: every class of input that once gave a wrong result
# printed as valid, lost rows or files while exiting 0, crashed, ran without end or met silence, fed to the CLI as a
# new user would. Each check states the exit code it expects (docs/cli.md#exit-codes) and words the output must (or
# must not) hold. Usage: tests/probe/probe.sh [path/to/tensorpath]   (ctest runs it as `probe`). Exit 1 if any check
# fails, listing them all.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tp="${1:-$root/build/tensorpath}"
[ -x "$tp" ] || { echo "probe: $tp is not an executable (build first)" >&2; exit 2; }
work="$(mktemp -d "${TMPDIR:-/tmp}/tp-probe.XXXXXX")"
trap 'rm -rf "$work"' EXIT
failures=0 checks=0
out="$work/out" err="$work/err"

# check NAME RC [+WORDS | -WORDS]... -- COMMAND...: run COMMAND; its exit code must be RC; stdout+stderr must hold each
# +WORDS and none of the -WORDS (fixed strings).
check() {
  local name="$1" want="$2"
  shift 2
  local -a must=() mustnt=()
  while [ "$1" != "--" ]; do
    case "$1" in
    +*) must+=("${1#+}") ;;
    -*) mustnt+=("${1#-}") ;;
    esac
    shift
  done
  shift
  checks=$((checks + 1))
  "$@" >"$out" 2>"$err" </dev/null
  local rc=$?
  local why=""
  [ "$rc" = "$want" ] || why="exit $rc, expected $want"
  for w in "${must[@]}"; do
    grep -qF -- "$w" "$out" "$err" || why="${why:+$why; }missing \"$w\""
  done
  for w in "${mustnt[@]}"; do
    grep -qF -- "$w" "$out" "$err" && why="${why:+$why; }has \"$w\""
  done
  if [ -n "$why" ]; then
    failures=$((failures + 1))
    echo "FAIL $name: $why"
    echo "     \$ $*"
    sed 's/^/     | /' "$err" | head -5
  else
    echo "ok   $name"
  fi
}

# expect NAME CONDITION-COMMAND...: a plain assertion about the files a check left.
expect() {
  local name="$1"
  shift
  checks=$((checks + 1))
  if "$@"; then echo "ok   $name"; else
    failures=$((failures + 1))
    echo "FAIL $name: $*"
  fi
}

small_sweep() { # a sweep of 4 quick transfer points; $1: extra top-level fields
  cat <<EOF
{"kind": "sweep", "name": "probe", "base": {"kind": "transfer", "hw": "connectx3-40gbe-roce", "transport": "grpc",
 "size": "64K", "steps": 2}, "axes": {"transport": ["grpc", "verbs_v2"], "size": ["64K", "1M"]}${1:-}}
EOF
}

echo "== numbers and sizes"
check "size overflowing 64 bits" 2 +"overflows 64 bits" -- "$tp" transfer --transport grpc --size 17179869184G
check "size beyond uint64" 2 +"too large" -- "$tp" transfer --transport grpc --size 99999999999999999999
check "4 GiB over verbs_v2 (32-bit SGE length)" 1 +"OutOfRange" +"does not fit ibv_sge's 32-bit length" -- \
  "$tp" transfer --transport verbs_v2 --size 4G --hw connectx4-edr-ib
check "2100M over verbs (RC message limit)" 1 +"local length error" +"2147483648" -"stalled" -- \
  "$tp" transfer --transport verbs_v1,verbs_v2 --size 2100M --hw connectx4-edr-ib
check "emulate --size 2^64-1" 2 +"--size" +"4503599627370496" -" ok" -- \
  "$tp" emulate --transport grpc --size 18446744073709551615
check "GPU index beyond int" 2 +"--src" +"gpu99999999999" -- "$tp" transfer --src gpu99999999999
check "GPU index beyond int (emulate)" 2 +"--src" -- "$tp" emulate --src gpu99999999999
check "integer option beyond long" 2 +"--steps" -- "$tp" transfer --steps 99999999999999999999999
check "NaN option" 2 +"--scale" -- "$tp" emulate --train vgg16 --scale nan
check "negative count" 2 +"--ranks" -- "$tp" allreduce --ranks -4

echo "== outputs that cannot be written"
check "records on a full disk" 3 +"/dev/full" +"output lost" -- "$tp" transfer --transport grpc --size 64K --records /dev/full
check "stdout on a full disk" 3 +"standard output" -- bash -c "'$tp' transfer --transport grpc --size 64K > /dev/full"
check "train --trace on a full disk" 3 +"/dev/full" -- "$tp" train --model alexnet --transport grpc --no-reference --trace /dev/full
check "run --trace on a full disk" 3 +"output lost" +"/dev/full" -- "$tp" run --trace /dev/full
check "emulate --records on a full disk" 3 +"/dev/full" -- "$tp" emulate --transport grpc --size 64K --steps 1 --records /dev/full
check "validate --json on a full disk" 3 +"/dev/full" -- "$tp" validate "$root/validation/cases/v3_pcie_numa_copies.json" --json /dev/full
echo "old" >"$work/keep.csv"
check "records beyond the file-size limit (a full disk)" 3 +"keep.csv" -- \
  bash -c "trap '' XFSZ; ulimit -f 1; exec '$tp' transfer --transport grpc --sweep --steps 1 --records '$work/keep.csv'"
expect "the old records file is whole" grep -qx old "$work/keep.csv"
expect "no temporary file left beside it" test "$(ls -A "$work" | grep -c keep.csv)" = 1
check "records to /dev/null" 0 -- "$tp" transfer --transport grpc --size 64K --records /dev/null
expect "/dev/null is still a device" test -c /dev/null

echo "== sweep rows files"
small_sweep >"$work/s.json"
cp "$work/s.json" "$work/s.orig"
check "--out is the sweep file itself" 2 +"sweep file itself" -- "$tp" sweep "$work/s.json" --out "$work/s.json" -q
expect "the sweep file is intact" cmp -s "$work/s.json" "$work/s.orig"
check "sweep rows on a full disk" 3 +"/dev/full" -- "$tp" sweep "$work/s.json" --out /dev/full -q
check "sweep to /dev/null" 0 -- "$tp" sweep "$work/s.json" --out /dev/null -q
expect "/dev/null is still a device after a sweep" test -c /dev/null
check "resume of a device" 2 +"--resume" -- "$tp" sweep "$work/s.json" --out /dev/null --resume -q
check "a sweep" 0 +"4 run now" -- "$tp" sweep "$work/s.json" --out "$work/rows.jsonl" -q
expect "its 4 rows" test "$(wc -l <"$work/rows.jsonl")" = 4
expect "no lock file left" test ! -e "$work/rows.jsonl.lock"
small_sweep ', "metrics": ["latency_us"]' >"$work/other.json"
check "resume with another sweep's rows" 2 +"another sweep spec" -- "$tp" sweep "$work/other.json" --out "$work/rows.jsonl" --resume -q
expect "the rows are untouched" test "$(wc -l <"$work/rows.jsonl")" = 4
# A second sweep on a file another sweep holds (a lock held by a sleeping flock, as a running sweep holds it).
flock "$work/held.jsonl.lock" -c "echo 424242 > '$work/held.jsonl.lock'; sleep 30" &
holder=$!
for _ in $(seq 50); do [ -s "$work/held.jsonl.lock" ] && break; sleep 0.1; done
check "two sweeps on one --out" 2 +"PID 424242" -- "$tp" sweep "$work/s.json" --out "$work/held.jsonl" -q
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
# points that cannot finish in a millisecond (fork alone takes longer): every one times out
small_sweep ', "point_timeout": 0.001' | sed 's/"64K", "1M"/"64M", "256M"/; s/"steps": 2/"steps": 50/' >"$work/slow.json"
check "points that fail (time out) make the sweep exit 1" 1 +"4 point(s) failed" -- "$tp" sweep "$work/slow.json" --out "$work/slow.jsonl" -q
expect "their error rows are kept" test "$(grep -c '"error"' "$work/slow.jsonl")" = 4

echo "== endless and oversized inputs"
check "replay of an endless device" 2 +"/dev/zero" +"TENSORPATH_MAX_INPUT_BYTES" -- env TENSORPATH_MAX_INPUT_BYTES=1048576 "$tp" replay /dev/zero
check "sweep of an endless device" 2 +"/dev/zero" -- env TENSORPATH_MAX_INPUT_BYTES=1048576 "$tp" sweep /dev/zero --out "$work/z.jsonl"
check "scenario of an endless device" 2 +"/dev/zero" -- env TENSORPATH_MAX_INPUT_BYTES=1048576 "$tp" run /dev/zero
check "plan of an endless device" 2 +"/dev/zero" -- env TENSORPATH_MAX_INPUT_BYTES=1048576 "$tp" plan /dev/zero

echo "== exit codes"
check "emulate without an RDMA device is a skip" 77 +"skipped: no device" -- "$tp" emulate --device ibv --size 4K
check "profiles of an unknown kind" 2 +"nosuchkind" -- "$tp" profiles nosuchkind
check "profiles: an unknown name" 2 +"nosuch" -- "$tp" profiles nic nosuch
check "profiles: an unknown nvlink" 2 +"nvlink4-nvswitch" -- "$tp" profiles nvlink nvlink9
check "pcie-copy --peer: the host's only GPU" 2 +"a GPU other than --peer 0" -- "$tp" pcie-copy --peer 0
check "pcie-copy --peer: the same GPU as --gpu" 2 +"other than --gpu" -- "$tp" pcie-copy --hw hgx-h100-8gpu --gpu 2 --peer 2
check "pcie-copy --peer: no such GPU" 2 +"-1..7" -- "$tp" pcie-copy --hw hgx-h100-8gpu --peer 8
check "collective: tree for all_gather" 2 +"--algo" +"rings only" -- "$tp" collective --op all_gather --algo tree
check "emulate: a comparison option without --compare" 2 +"--allow-disturbed-calibration" -- "$tp" emulate --allow-disturbed-calibration --size 4K
check "collective: an algorithm for alltoall" 2 +"--algo" +"point-to-point" -- "$tp" collective --op alltoall --algo ring
check "collective: an unknown op" 2 +"all_reduce, all_gather" -- "$tp" collective --op allreduce
check "collective: more GPUs than the host has" 2 +"--gpus-per-node" +"1 to 8" -- "$tp" collective --gpus-per-node 9
check "collective: one GPU in all" 2 +"at least 2 GPUs" -- "$tp" collective --gpus-per-node 1
check "collective: -e below -b" 2 +"-e/--maxbytes" -- "$tp" collective -b 1M -e 1K
check "collective: gathers of less than a float per rank" 2 +"at least 32 bytes" -- "$tp" collective --op all_gather -b 8 -e 16
check "collective: no channels" 2 +"--channels" -- "$tp" collective --channels 0
check "collective: an unknown topology" 2 +"--topology" +"superpod-ndr-2tier" -- "$tp" collective --nodes 4 --topology superpod-2tier
check "collective: oversubscription without a topology" 2 +"--oversubscription" +"multi-tier" -- "$tp" collective --nodes 4 --oversubscription 2
check "collective: oversubscription below 1" 2 +"--oversubscription" +"from 1" -- "$tp" collective --nodes 4 --topology superpod-ndr-2tier --oversubscription 0.5
check "collective: one ratio too many" 2 +"1 ratio(s) for superpod-ndr-2tier" -- "$tp" collective --nodes 4 --topology superpod-ndr-2tier --oversubscription 1,2
check "collective: an unknown ECMP placement" 2 +"--ecmp" +"hash, dmodk or spread" -- "$tp" collective --nodes 4 --topology superpod-ndr-2tier --ecmp random
check "collective: busiest links on a Clos" 0 +"fabric superpod-ndr-3tier" +"busiest link per tier" +"spine>core" -- "$tp" collective --nodes 512 --op alltoall -b 1G -e 1G --topology superpod-ndr-3tier
check "the simulator on a SimGrid fat tree" 0 +"verbs_v2" -"ERROR" -- "$tp" transfer --hw simgrid-fat-tree-64 --transport grpc,verbs_v2 --size 1M
check "collective: -b 0 with -f (sizes that never grow)" 2 +"-b/--minbytes" -- "$tp" collective -b 0 -e 8G -f 2
check "collective: a step factor barely above 1" 2 +"-f/--stepfactor" +"100000 sizes" -- "$tp" collective -b 8 -e 8G -f 1.0000001
check "collective: linear steps of one byte up to 8G" 2 +"-i/--stepbytes" +"100000 sizes" -- "$tp" collective -b 8 -e 8G -i 1
check "collective: nccl-tests' linear default steps" 0 +"133169160" +"# Avg bus bandwidth" -- "$tp" collective --hw a100-8gpu-4hdr --nodes 3 -b 8 -e 128M
check "collective: an unknown --nic" 2 +"--nic" +"connectx7-ndr-400g-ib" -- "$tp" collective --nodes 2 --nic cx9
check "collective: a Gen4 PCIe override" 0 +"busbw #wrong" -- "$tp" collective --nodes 2 --pcie gen4-x16
check "replay: collectives by the NCCL model" 0 +"nccl ring/Simple 1x2" +"NVLink" -- "$tp" replay "$root/tests/traces/fixtures/real/hta_nccl_data_slice.json" --hw hgx-h100-8gpu --collectives nccl --ranks-per-node 2
check "replay: an unknown collectives model" 2 +"--collectives" +"auto, ring or nccl" -- "$tp" replay "$root/tests/traces/fixtures/real/hta_nccl_data_slice.json" --hw hgx-h100-8gpu --collectives ncl
check "collective: more leaves than two tiers take" 2 +"max_leaves" +"a third tier" -- "$tp" collective --nodes 1024 --topology superpod-ndr-2tier
check "collective: an alltoall of too many flows" 2 +"--nodes" +"flows" -- "$tp" collective --op alltoall --nodes 4096 --topology superpod-ndr-3tier
check "collective: a table nccl-tests users read" 0 +"busbw #wrong" +"# Avg bus bandwidth" -- "$tp" collective -b 8 -e 1M -f 4
echo '{"name": "x", "jobs": [{"kind": "perftest", "hw": "connectx9-9000g"}]}' >"$work/badhw.json"
check "scenario with an unknown hw is bad input" 2 +"connectx9-9000g" +"jobs[0].hw" -- "$tp" run "$work/badhw.json"

echo "== faults, failures and slowness"
cat >"$work/late.json" <<'EOF'
{"kind": "training", "name": "late", "hw": "hkust-4node", "jobs": [{"kind": "training", "model": "synthetic",
 "parameters": 1000000, "layers": 4, "compute_ms": 10, "batch": 32, "workers": 2, "gpus_per_worker": 1, "ps": 1,
 "steps": 3, "reference": false, "transport": "verbs_v2",
 "faults": [{"type": "link_down", "host": "node1", "step": 2, "at": "5 s", "duration": "1 s"}]}]}
EOF
check "a fault after the work has ended never fires" 0 +"never fired" -- "$tp" run "$work/late.json"
check "a fault scenario where transports failed exits 1" 1 +"FAILED" -- "$tp" run "$root/scenarios/faults/qp-error.json"
echo '{"name": "x", "jobs": [{"kind": "training", "hw": "hkust-4node", "model": "synthetic", "parameters": 1000, "layers": 1, "compute_ms": 1e308, "transport": "grpc"}]}' >"$work/huge.json"
check "compute beyond the simulated clock is bad input, not a stall" 2 +"compute_ms" -- "$tp" run "$work/huge.json"

echo "== unknown names get the valid ones and a suggestion"
check "transport typo" 2 +"did you mean \"verbs_v1\"" -- "$tp" transfer --transport verbs_v3
check "--repeats without --compare" 2 +"--repeats" +"--compare" -- "$tp" emulate --repeats 2
check "--compare --repeats 0" 2 +"--repeats" -- "$tp" emulate --compare --repeats 0
check "TensorFlow release it does not know" 2 +"--tf" +"1.0 to 1.15" -- "$tp" train --tf 2.4 --no-reference
check "train names the gRPC threads in force" 0 +"gRPC threads per process: 1 server, 1 client (TensorFlow 1.3)" +"CPU per task and step" -- \
  "$tp" train --model alexnet --transport grpc --no-reference --tf 1.3 --steps 2
check "model typo" 2 +"did you mean \"resnet50\"" -- "$tp" train --model resnet5
check "allreduce library typo" 2 +"did you mean \"horovod\"" -- "$tp" train --mode allreduce --library horovd
echo '{"name": "x", "jobs": [{"kind": "perftest", "hw": "connectx3-40gbe-roce", "sizse": 64}]}' >"$work/typo.json"
check "scenario field typo" 2 +"did you mean \"size\"" -- "$tp" run "$work/typo.json"
small_sweep ', "metrics": ["latency_usec"]' >"$work/m.json"
check "sweep metric typo" 2 +"metrics[0]" +"did you mean \"latency_us\"" -- "$tp" sweep "$work/m.json" --out "$work/m.jsonl"
sed 's/"transport": \["grpc", "verbs_v2"\]/"transport": ["grpc", "verbs_v9"]/' "$work/s.json" >"$work/t.json"
check "sweep point with a bad transport, before anything runs" 2 +"verbs_v9" -- "$tp" sweep "$work/t.json" --out "$work/t.jsonl"
expect "nothing ran" test ! -s "$work/t.jsonl"
sed 's/"hw": "connectx3-40gbe-roce"/"hw": "connectx3-40gbe-rocee"/' "$work/s.json" >"$work/h.json"
check "sweep with a bad base hw, before anything runs" 2 +"connectx3-40gbe-rocee" -- "$tp" sweep "$work/h.json" --out "$work/h.jsonl"
check "plan --target typo" 2 +"did you mean \"latency_us\"" -- "$tp" plan "$work/rows.jsonl" --target "latency_usec<=100" --cost latency_us
check "plan --where field typo" 2 +"did you mean \"transport\"" -- "$tp" plan "$work/rows.jsonl" --target "latency_us<=100" --where transprt=grpc --cost latency_us
check "plan --where value typo" 2 +"did you mean \"grpc\"" -- "$tp" plan "$work/rows.jsonl" --target "latency_us<=100" --where transport=gprc --cost latency_us
check "plan --target NaN" 2 +"--target" -- "$tp" plan "$work/rows.jsonl" --target "latency_us<=nan"

echo "== conflicting or ignored flags"
check "--sweep with --size" 2 +"--size" -- "$tp" transfer --sweep --size 1M
check "ps option in allreduce mode" 2 +"--ps" -- "$tp" train --mode allreduce --ps 2
check "fetch option in allreduce mode" 2 +"--fetch" -- "$tp" train --mode allreduce --fetch per_worker
check "allreduce option in ps mode" 2 +"--fusion" -- "$tp" train --mode ps --fusion 64M
check "analytical collectives on a path they do not model" 2 +"transport mpi" -- "$tp" train --mode allreduce --collective-mode analytical --transport grpc
check "analytical collectives with a blocking MPI receive" 2 +"--mpi-nonblocking-recv" -- "$tp" train --mode allreduce --collective-mode analytical --transport mpi
check "a stray argument" 2 +"stray" -- "$tp" perftest stray
check "two scenario files" 2 +"b.json" -- "$tp" run a.json b.json
echo '{"name": "x", "jobs": [{"kind": "training", "hw": "hkust-4node", "model": "vgg16", "transport": "grpc", "mode": "allreduce", "fetch": "per_worker"}]}' >"$work/conf.json"
check "scenario: ps field in an allreduce job" 2 +"fetch" -- "$tp" run "$work/conf.json"

echo "== defaults that match the real systems"
check "--help names the Horovod defaults" 0 +"128 MiB" -- "$tp" train --help

echo "== input files: numbers that cannot be right, repeated keys, platform XML, profiles of one's own"
echo '{"traceEvents": [{"ph": "X", "name": "Conv2D", "pid": 1, "ts": "nan", "dur": 5}]}' >"$work/nan-trace.json"
check "NaN timestamp in a trace" 2 +"traceEvents[0].ts" -- "$tp" replay "$work/nan-trace.json"
printf '%s\n' '{"type": "COMP_NODE", "durationMicros": "inf"}' >"$work/inf-chakra.json"
check "infinite duration in a Chakra trace" 2 +"line 1: durationMicros" -- "$tp" replay "$work/inf-chakra.json"
mkdir -p "$work/hw/nic" "$work/hw/switch"
sed '0,/"value": 40,/s//"value": 1e308,/' "$root/models/hw/nic/connectx3-40gbe-roce.json" >"$work/hw/nic/huge.json" # line_rate
check "a profile rate of 1e308 Gb/s (infinity)" 2 +"line_rate.value" +"infinity" -- "$tp" profiles nic huge --models-dir "$work/hw"
echo '{"kind": "switch", "latency": {"value": -0.0, "unit": "ns", "source": "probe"}}' >"$work/hw/switch/negzero.json"
check "a latency of -0" 2 +"latency.value" -"-0.000000" -- "$tp" profiles switch negzero --models-dir "$work/hw"
echo '{"kind": "switch", "latency": {"value": 1, "unit": "ns", "source": "probe"}, "latency": {"value": 2, "unit": "ns", "source": "probe"}}' >"$work/hw/switch/twice.json"
check "a key given twice in a profile" 2 +"each key once" -- "$tp" profiles switch twice --models-dir "$work/hw"
echo '{"name": "x", "jobs": [{"kind": "perftest", "hw": "connectx3-40gbe-roce", "size": 64, "size": 128}]}' >"$work/dupkey.json"
check "a key given twice in a scenario" 2 +"jobs[0].size" +"each key once" -- "$tp" run "$work/dupkey.json"
cluster_xml() { # a cluster profile whose network is $work/net.xml
  echo '{"kind": "cluster", "hosts": [{"host": "k40m-10gbe"}], "switch": "mellanox-sb7800", "network": "net.xml"}' >"$work/xc.json"
}
cluster_xml
printf '%s\n' "<?xml version='1.0'?>" "<platform version='4.1'><cluster id='c' prefix='n' suffix='' radical='0-3' bw='10Gbps' bw='1Gbps' lat='1us'/></platform>" >"$work/net.xml"
check "XML with an attribute given twice" 2 +"net.xml" +"\"bw\" again" -- "$tp" profiles cluster "$work/xc.json"
printf '%s\n' "<?xml version='1.0'?>" "<platform version='4.1'><zone id='z' routing='Floyd'><host id='a'/><host id='b'/><link id='l' bandwidth='1Gbps' latency='1us'/><route src='a' dst='b'><link_ctn id='l'/></route></zone></platform>" >"$work/net.xml"
check "an unsupported zone routing (Floyd)" 2 +"routing=\"Floyd\"" +"routing=\"Full\"" -- "$tp" profiles cluster "$work/xc.json"
printf '%s\n' "<?xml version='1.0'?>" "<!DOCTYPE platform [<!ENTITY x \"a>b<host id='evil'/>\">]>" "<platform version='4.1'><cluster id='c' prefix='n' suffix='' radical='0-3' bw='10Gbps' lat='1us'/>&x;</platform>" >"$work/net.xml"
check "markup hidden in an entity" 2 +"entities are not expanded" -- "$tp" profiles cluster "$work/xc.json"
mkdir -p "$work/own/switch" "$work/lab"
echo '{"kind": "switch", "latency": {"value": 100, "unit": "ns", "source": "probe"}}' >"$work/own/switch/own-switch.json"
check "--models-dir finds one's own profile" 0 +"own-switch.json" -- "$tp" profiles switch own-switch --models-dir "$work/own"
check "TENSORPATH_MODELS_DIR finds it" 0 +"own-switch.json" -- env TENSORPATH_MODELS_DIR="$work/own" "$tp" profiles switch own-switch
check "an unknown profile says where it looked" 2 +"$work/own (--models-dir)" +"(built-in)" -- "$tp" perftest --hw no-such-nic --models-dir "$work/own"
sed '0,/"value": 40,/s//"value": 25,/' "$root/models/hw/nic/connectx3-40gbe-roce.json" >"$work/lab/lab-nic.json"
echo '{"name": "lab", "jobs": [{"kind": "perftest", "hw": "lab-nic", "size": 1048576, "iterations": 100}]}' >"$work/lab/scenario.json"
check "a scenario's hw beside it" 0 +"1048576" -- "$tp" run "$work/lab/scenario.json"

# A profile name that is a prefix or a near miss of a built-in one.
check "hw name: a prefix of a profile" 2 +"did you mean \"connectx4-edr-ib\"" -- "$tp" perftest --hw connectx4
echo '{"name": "x", "jobs": [{"kind": "perftest", "hw": "connectx5-100gbe-rcoe"}]}' >"$work/typohw.json"
check "hw name: a typo in a scenario" 2 +"jobs[0].hw" +"did you mean \"connectx5-100gbe-roce\"" -- "$tp" run "$work/typohw.json"

# Budget (docs/resource-bounds.md): runs that would not end, refused up front with what drives them.
check "a million ranks on every host is refused up front" 2 +"--ranks 1048576" +"TENSORPATH_TIME_LIMIT" -- "$tp" allreduce --ranks 1048576 --mode analytical --every-host
check "--every-host outside the analytical mode is refused" 2 +"--every-host" +"--mode flow" -- "$tp" allreduce --ranks 4 --mode flow --every-host
check "a million ranks read from three hosts run" 0 +"read from 3 of the 1048576 identical hosts" -- "$tp" allreduce --ranks 1048576 --mode analytical
check "100000 tensors x 100 steps is refused up front" 2 +"--tensors" -- "$tp" transfer --transport verbs_v2 --tensors 100000 --steps 100
check "an unreadable time limit is an error, not no limit" 2 +"TENSORPATH_TIME_LIMIT" -- env TENSORPATH_TIME_LIMIT=soon "$tp" allreduce --ranks 4

echo
echo "probe: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
