/* Drawing the gang-scheduling matrix for storm matrix (mview.h). Pure. */
#include "mview.h"

#include <inttypes.h>
#include <string.h>

static int home_of(const struct mview *v, uint64_t id)
{
	for (int k = 0; k < v->njobs; k++)
		if (v->job_ids[k] == id)
			return v->job_homes[k];
	return -1;
}

static void cell_text(const struct mview *v, int r, int p, char *out, size_t len)
{
	uint64_t id = v->cells[(size_t)r * (size_t)v->nnodes + (size_t)p];
	if (!id)
		snprintf(out, len, "%s", v->down && v->down[p] ? "x" : ".");
	else
		snprintf(out, len, "%" PRIu64 "%s", id, home_of(v, id) == r ? "" : "+");
}

void mview_draw(FILE *f, const struct mview *v, int width)
{
	/* one width for every column: the widest cell or node number */
	int cw = 1;
	char buf[32];
	for (int p = 0; p < v->nnodes; p++) {
		int n = snprintf(buf, sizeof(buf), "%d", p);
		if (n > cw)
			cw = n;
		for (int r = 0; r < v->mpl; r++) {
			cell_text(v, r, p, buf, sizeof(buf));
			if ((int)strlen(buf) > cw)
				cw = (int)strlen(buf);
		}
	}
	const int lead = 7; /* ">row 12" */
	int per = (width - lead) / (cw + 1);
	if (per < 1)
		per = 1;
	for (int from = 0; from < v->nnodes; from += per) {
		int to = from + per < v->nnodes ? from + per : v->nnodes;
		if (from)
			fputc('\n', f);
		fprintf(f, "%-*s", lead, "node");
		for (int p = from; p < to; p++)
			fprintf(f, " %*d", cw, p);
		fputc('\n', f);
		for (int r = 0; r < v->mpl; r++) {
			fprintf(f, "%crow %-2d", r == v->row ? '>' : ' ', r);
			for (int p = from; p < to; p++) {
				cell_text(v, r, p, buf, sizeof(buf));
				fprintf(f, " %*s", cw, buf);
			}
			fputc('\n', f);
		}
	}
}
