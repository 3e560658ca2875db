/* The environment: Initialized before and after Init_thread (FUNNELED),
 * Is_thread_main on the initializing thread and on another one, Finalized, Wtime and Wtick, Get_processor_name, Get_version, Error_class
 * and Error_string. Only what MPI defines is printed (no name, no time). */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "suite.h"
#include <pthread.h>
#include <time.h>

static void *ask_main(void *flag)
{
	MPI_Is_thread_main(flag);
	return NULL;
}

int main(int argc, char **argv)
{
	int flag = -1, provided = -1;
	MPI_Initialized(&flag);
	int before = flag;
	MPI_Finalized(&flag);
	int fin_before = flag;
	int rc = MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	suite_begin();
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	checki(before, 0, "initialized.before_init");
	checki(fin_before, 0, "finalized.before_init");
	checkrc(rc, MPI_SUCCESS, "init_thread.rc");
	check(provided >= MPI_THREAD_FUNNELED, "init_thread.provided_at_least_funneled");
	check(MPI_THREAD_SINGLE < MPI_THREAD_FUNNELED && MPI_THREAD_FUNNELED < MPI_THREAD_SERIALIZED &&
		      MPI_THREAD_SERIALIZED < MPI_THREAD_MULTIPLE,
	      "thread_levels.ordered");
	MPI_Initialized(&flag);
	checki(flag, 1, "initialized.after_init");
	int is_main = -1, other = -1;
	MPI_Is_thread_main(&is_main);
	checki(is_main, 1, "is_thread_main.initializing_thread");
	pthread_t th;
	if (pthread_create(&th, NULL, ask_main, &other) == 0)
		pthread_join(th, NULL);
	checki(other, 0, "is_thread_main.another_thread");
	MPI_Finalized(&flag);
	checki(flag, 0, "finalized.before_finalize");

	/* time: positive tick, never going back, and it follows real time */
	double tick = MPI_Wtick(), t0 = MPI_Wtime();
	check(tick > 0 && tick <= 1.0, "wtick.range");
	int mono = 1;
	double prev = t0;
	for (int i = 0; i < 1000; i++) {
		double t = MPI_Wtime();
		mono &= t >= prev;
		prev = t;
	}
	check(mono, "wtime.monotonic");
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	double dt = MPI_Wtime() - t0;
	check(dt >= 0.019, "wtime.follows_sleep");

	char name[MPI_MAX_PROCESSOR_NAME + 1];
	int len = -1;
	memset(name, 'x', sizeof name);
	checkrc(MPI_Get_processor_name(name, &len), MPI_SUCCESS, "processor_name.rc");
	check(len > 0 && len < MPI_MAX_PROCESSOR_NAME && (int)strlen(name) == len,
	      "processor_name.length");

	int ver = -1, sub = -1;
	checkrc(MPI_Get_version(&ver, &sub), MPI_SUCCESS, "get_version.rc");
	check(ver == MPI_VERSION && sub == MPI_SUBVERSION, "get_version.matches_header");
	check(ver >= 3, "get_version.at_least_3");

	/* error classes are their own class; strings fit and are not empty */
	const int classes[] = { MPI_SUCCESS,      MPI_ERR_BUFFER, MPI_ERR_COUNT,  MPI_ERR_TYPE,
				MPI_ERR_TAG,      MPI_ERR_COMM,   MPI_ERR_RANK,   MPI_ERR_REQUEST,
				MPI_ERR_ROOT,     MPI_ERR_OP,     MPI_ERR_ARG,    MPI_ERR_UNKNOWN,
				MPI_ERR_TRUNCATE, MPI_ERR_OTHER,  MPI_ERR_INTERN, MPI_ERR_IN_STATUS,
				MPI_ERR_PENDING };
	const char *cnames[] = { "MPI_SUCCESS",      "MPI_ERR_BUFFER", "MPI_ERR_COUNT",
				 "MPI_ERR_TYPE",     "MPI_ERR_TAG",    "MPI_ERR_COMM",
				 "MPI_ERR_RANK",     "MPI_ERR_REQUEST", "MPI_ERR_ROOT",
				 "MPI_ERR_OP",       "MPI_ERR_ARG",    "MPI_ERR_UNKNOWN",
				 "MPI_ERR_TRUNCATE", "MPI_ERR_OTHER",  "MPI_ERR_INTERN",
				 "MPI_ERR_IN_STATUS", "MPI_ERR_PENDING" };
	int distinct = 1;
	for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
		int cls = -1;
		checkrc(MPI_Error_class(classes[i], &cls), MPI_SUCCESS, nm("error_class.%s.rc", cnames[i]));
		checki(cls, classes[i], nm("error_class.%s", cnames[i]));
		check(classes[i] <= MPI_ERR_LASTCODE, nm("error_class.%s.le_lastcode", cnames[i]));
		char s[MPI_MAX_ERROR_STRING];
		int sl = -1;
		memset(s, 0, sizeof s);
		checkrc(MPI_Error_string(classes[i], s, &sl), MPI_SUCCESS, nm("error_string.%s.rc", cnames[i]));
		check(sl > 0 && sl < MPI_MAX_ERROR_STRING && (int)strlen(s) == sl,
		      nm("error_string.%s", cnames[i]));
		for (size_t j = 0; j < i; j++)
			distinct &= classes[i] != classes[j];
	}
	check(distinct && MPI_SUCCESS == 0, "error_classes.distinct");
	/* the code a failing call returns maps to its class */
	int x = 0;
	rc = MPI_Send(&x, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD);
	int cls = -1;
	MPI_Error_class(rc, &cls);
	checki(cls, MPI_ERR_RANK, "error_class.of_returned_code");
	char s[MPI_MAX_ERROR_STRING];
	int sl = -1;
	MPI_Error_string(rc, s, &sl);
	check(sl > 0 && (int)strlen(s) == sl, "error_string.of_returned_code");

	int wr = -1, ws = -1;
	MPI_Comm_rank(MPI_COMM_WORLD, &wr);
	MPI_Comm_size(MPI_COMM_WORLD, &ws);
	check(wr >= 0 && wr < ws, "comm_world.rank_in_range");

	int status = suite_finish("env");
	/* after MPI_Finalize (in suite_finish) */
	MPI_Finalized(&flag);
	int init = 0;
	MPI_Initialized(&init);
	if (rank == 0)
		printf("env: finalized after finalize %s, initialized after finalize %s\n",
		       flag ? "ok" : "FAIL", init ? "ok" : "FAIL");
	return status || !flag || !init;
}
