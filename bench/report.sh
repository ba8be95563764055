#!/usr/bin/env bash
# bench/report.sh [BUILD_DIR] [weft bench options...]: runs the whole benchmark suite
# (`weft bench --policy all`, by default with --device-spec h100,a100,v100), then
#   - puts its Markdown tables into docs/performance.md, between the markers
#     <!-- bench:begin --> and <!-- bench:end -->,
#   - draws docs/performance.svg with gnuplot: bytes moved (over the compulsory bytes) and
#     modeled h100 time, per workload and policy, log scales.
# The raw rows stay in BUILD_DIR/bench-report/. gnuplot comes from Debian's gnuplot-nox,
# installed here when missing (CI never runs this script, so CI does not need it).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
[ $# -gt 0 ] && shift
weft="$build/tools/weft"
out="$build/bench-report"
mkdir -p "$out"
[ -x "$weft" ] || { echo "report.sh: $weft not found; build the weft target first" >&2; exit 1; }

if ! command -v gnuplot > /dev/null; then
  echo "report.sh: installing gnuplot-nox" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends gnuplot-nox
fi

start=$(date +%s)
# All three profiles by default (the counts and compile times are the first one's).
[ $# -eq 0 ] && set -- --device-spec h100,a100,v100
(cd "$root" && "$weft" bench --policy all --format md -o "$out/table.md" --csv "$out/runs.csv" "$@")
echo "report.sh: weft bench took $(( $(date +%s) - start )) s" >&2

# Wide tables for gnuplot's clustered histograms: workload, none, xla, astitch (h100 rows).
# CSV columns: workload,policy,profile,kernels,grid_barriers,bytes,compulsory_bytes,modeled_us,...
wide() { # $1: ratio | time
  awk -F, -v what="$1" 'NR > 1 && $3 == "h100" {
      if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }
      v[$1, $2] = (what == "ratio") ? $6 / $7 : $8
    }
    END { print "workload none xla astitch"
          for (i = 1; i <= n; i++) { k = order[i]; print k, v[k, "none"], v[k, "xla"], v[k, "astitch"] } }' \
    "$out/runs.csv"
}
wide ratio > "$out/bytes_ratio.dat"
wide time > "$out/modeled_us.dat"

gnuplot <<GNUPLOT
set terminal svg size 1100,900 dynamic noenhanced font "sans,11" background "white"
set output "$root/docs/performance.svg"
set multiplot layout 2,1
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key top left autotitle columnheader
set logscale y
set grid ytics
set xtics rotate by -30 nomirror
set title "Global bytes moved / compulsory bytes (simulator sectors x 32; 1 = every input read once, every output written once)"
set ylabel "ratio (log)"
set yrange [0.5:*]
plot "$out/bytes_ratio.dat" using 2:xtic(1) lc rgb "#b0b0b0", '' using 3 lc rgb "#e6a23c", '' using 4 lc rgb "#3c78d8", \
     1.1 with lines dashtype 2 lc rgb "#c00000" title "astitch target 1.10 (rows on chip)"
set title "Modeled GPU time on h100 (µs, log): max(bytes / bandwidth, instructions / issue rate) + launches + grid barriers"
set ylabel "µs (log)"
set yrange [1:*]
plot "$out/modeled_us.dat" using 2:xtic(1) lc rgb "#b0b0b0", '' using 3 lc rgb "#e6a23c", '' using 4 lc rgb "#3c78d8"
unset multiplot
GNUPLOT
echo "report.sh: wrote docs/performance.svg" >&2

doc="$root/docs/performance.md"
awk -v table="$out/table.md" '
  /<!-- bench:begin -->/ {
    print; print ""
    while ((getline line < table) > 0) { if (line ~ /^## /) line = "#" line; print line }  # under "## Results"
    skip = 1; next
  }
  /<!-- bench:end -->/ { skip = 0 }
  !skip { print }' "$doc" > "$doc.tmp"
mv "$doc.tmp" "$doc"
echo "report.sh: updated $doc" >&2
