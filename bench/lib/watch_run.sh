# Sourced by the benchmarks that run MPICH beside BCS-MPI. MPICH over UCX
# 1.13's TCP transport now and then hangs in MPI_Finalize after the results
# are out (a rank flushing an endpoint that its peers, already in the PMI
# barrier, no longer progress: a hang reported to UCX upstream).
#
# watch_run WATCH DONE_RE DONE_FILE COMMAND...: runs COMMAND with $WORK/out
# and $WORK/err as its output, at most $RUN_TIMEOUT seconds. With WATCH 1,
# 3 s after a line of $WORK/DONE_FILE matches DONE_RE (the program's results
# are complete) the command is ended and HUNG set to 1; the run's results
# stand, they were measured before. BCS-MPI's runs are not watched (WATCH 0:
# a recorded run's trace is written at MPI_Finalize).
HUNG=0
watch_run() {
	HUNG=0
	local watch=$1 done_re=$2 done_file=$WORK/$3
	shift 3
	if [ "$watch" = 0 ]; then
		timeout "$RUN_TIMEOUT" "$@" >"$WORK/out" 2>"$WORK/err"
		return
	fi
	timeout "$RUN_TIMEOUT" "$@" >"$WORK/out" 2>"$WORK/err" &
	local pid=$! t_end=""
	while kill -0 $pid 2>/dev/null; do
		sleep 0.1
		if [ -z "$t_end" ]; then
			grep -qE "$done_re" "$done_file" && t_end=$SECONDS
		elif [ $((SECONDS - t_end)) -ge 3 ]; then
			HUNG=1
			kill -TERM $pid 2>/dev/null
			break
		fi
	done
	wait $pid
}
