# Shared by bench/gang's scripts (bash): logging to $LOG and stderr, the
# load, and wall-clock times in seconds with µs resolution.
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }
load1() { cut -d' ' -f1 /proc/loadavg; }
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", b - a }'; }
