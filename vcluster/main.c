/* storm-cluster: the virtual-cluster manager behind `storm cluster`, which
 * runs it with its own arguments (and --conf FILE first when given). */
#include <string.h>

#include "cli.h"
#include "vcluster.h"

int main(int argc, char **argv)
{
	struct cli c = { 0 };
	int first = 1;
	if (argc > 2 && !strcmp(argv[1], "--conf")) {
		c.conf_opt = argv[2];
		first = 3;
	}
	/* as `storm cluster ...` gives them: the command's name, then its own */
	argv[first - 1] = "cluster";
	int rc = cmd_cluster(&c, argc - (first - 1), argv + (first - 1));
	if (c.have_conf)
		conf_free(&c.conf);
	return rc;
}
