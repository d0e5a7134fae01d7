#!/usr/bin/env bash
# Runs a Tether test campaign on a Slurm cluster: a job array of SLICES tasks (each one
# `tether test --shard K/SLICES`, scripts/campaign_slice.sbatch) and, after all of them
# whatever their outcome, a job that merges the slices into one junit.xml, index.html and
# campaign.json (docs/campaigns.md). Run it from the repository on the cluster's shared file
# system, on a host where sbatch works.
#   scripts/slurm_campaign.sh [--wait] [--cpus-per-slice N] [--out DIR] CAMPAIGN SLICES [tether test options]
# --wait: returns when the merge is done, prints each slice's state and exits with the
# campaign's verdict (0 every run passed, 6 a run failed, 2 the campaign could not run).
# Without it: prints the job ids and where the results will be, and returns at once.
# TETHER names the tether binary (default: build/tether beside this script).
set -euo pipefail

usage() {
  echo "usage: scripts/slurm_campaign.sh [--wait] [--cpus-per-slice N] [--out DIR] CAMPAIGN SLICES [tether test options]" >&2
  exit 2
}
here=$(cd "$(dirname "$0")" && pwd)
wait=0
cpus=1
out=
while (($#)); do
  case "$1" in
    --wait) wait=1; shift ;;
    --cpus-per-slice) cpus=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    *) break ;;
  esac
done
(($# >= 2)) || usage
campaign=$1
slices=$2
shift 2
[[ "$slices" =~ ^[1-9][0-9]*$ ]] || { echo "slurm_campaign: SLICES must be a positive number, not '$slices'" >&2; exit 2; }
[[ -f "$campaign" ]] || { echo "slurm_campaign: $campaign: no such campaign file" >&2; exit 2; }
command -v sbatch >/dev/null || { echo "slurm_campaign: sbatch is not on PATH (a Slurm client: apt-get install slurm-client)" >&2; exit 3; }
tether=$(realpath "${TETHER:-$here/../build/tether}")
[[ -x "$tether" ]] || { echo "slurm_campaign: $tether is not an executable (build first, or set TETHER)" >&2; exit 3; }
# the list of runs is checked here, once, rather than by every slice
"$tether" test "$campaign" --list "$@" >/dev/null || { echo "slurm_campaign: tether test refused the campaign (above)" >&2; exit 2; }

name=$(basename "$campaign" .yaml)
out=$(realpath -m "${out:-runs/$name-$(date +%Y%m%d-%H%M%S)}")
mkdir -p "$out"  # Slurm does not make the folder of --output; a task whose file it cannot open fails
array=$(TETHER=$tether TETHER_CAMPAIGN_OUT=$out sbatch --parsable --array="1-$slices" --cpus-per-task="$cpus" \
  --job-name="tether-$name" --output="$out/slurm-%a.out" --export=ALL \
  "$here/campaign_slice.sbatch" "$(realpath "$campaign")" "$@")
array=${array%%;*}
merge_cmd="'$tether' test --merge"
for k in $(seq "$slices"); do merge_cmd+=" '$out/shard-$k'"; done
merge_cmd+=" --out '$out/all'"
submit_merge=(sbatch --parsable --dependency="afterany:$array" --job-name="tether-$name-merge"
  --output="$out/merge.out" --wrap "$merge_cmd")
echo "slurm_campaign: job array $array, $slices slices of $campaign, into $out"
if ((wait == 0)); then
  merge=$("${submit_merge[@]}")
  echo "slurm_campaign: merge job ${merge%%;*} after it; results in $out/all (index.html, junit.xml, campaign.json)"
  exit 0
fi
merge=$("${submit_merge[@]}")
merge=${merge%%;*}
# (sbatch --wait polls ever more slowly, up to 30 s apart: a queue listing every 2 s instead)
while [[ -n "$(squeue -h -j "$array,$merge" -o %i 2>/dev/null)" ]]; do sleep 2; done
# the merge's exit code: from the controller while it holds the finished job (MinJobAge,
# 300 s by default), else from the accounting database
code=$(scontrol -o show job "$merge" 2>/dev/null | grep -o ' ExitCode=[0-9]*' | cut -d= -f2 || true)
[[ -n "$code" ]] || code=$(sacct -n -X -P -j "$merge" -o ExitCode 2>/dev/null | head -1 | cut -d: -f1 || true)
verdict=${code:-1}
# each slice's state while the controller still holds it (MinJobAge)
scontrol -o show job "$array" 2>/dev/null | tr ' ' '\n' | grep -E '^(ArrayTaskId|JobState|ExitCode)=' |
  paste - - - | sed 's/^/slurm_campaign: slice /' || true
cat "$out/merge.out" 2>/dev/null || true
[[ -n "$code" ]] || echo "slurm_campaign: the merge job's exit code is known neither to scontrol nor to sacct" >&2
echo "slurm_campaign: merge job $merge exited $verdict; results in $out/all"
exit "$verdict"
