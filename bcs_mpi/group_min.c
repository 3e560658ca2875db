/* BCS-MPI groups: the few calls one-sided synchronisation needs
 * (MPI_Win_post and MPI_Win_start name their peers by a group). A group is
 * an ordered list of world ranks kept in this rank's memory. */
#include <stdlib.h>
#include <string.h>

#include "bcs.h"

#define MAX_GROUPS 4096

static struct {
	int used, n;
	int *world;
} groups[MAX_GROUPS];

const int *bcs_group_world(MPI_Group g, int *n)
{
	if (g <= 0 || g >= MAX_GROUPS || !groups[g].used)
		return NULL;
	*n = groups[g].n;
	return groups[g].world;
}

static MPI_Group group_new(int n, int *world)
{
	for (int i = 1; i < MAX_GROUPS; i++)
		if (!groups[i].used) {
			groups[i].used = 1;
			groups[i].n = n;
			groups[i].world = world;
			return i;
		}
	free(world);
	return MPI_GROUP_NULL;
}

int MPI_Comm_group(MPI_Comm comm, MPI_Group *group)
{
	bcs_need_init("MPI_Comm_group");
	struct bcs_comm *c = bcs_comm_get(comm);
	if (!c)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_group");
	int *w = malloc((size_t)c->size * sizeof(int));
	if (!w)
		return bcs_err(comm, MPI_ERR_INTERN, "MPI_Comm_group");
	memcpy(w, c->world, (size_t)c->size * sizeof(int));
	*group = group_new(c->size, w);
	return *group ? MPI_SUCCESS : bcs_err(comm, MPI_ERR_INTERN, "MPI_Comm_group");
}

int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
	int size;
	const int *from = bcs_group_world(group, &size);
	if (!from)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_GROUP, "MPI_Group_incl");
	if (n < 0 || n > size)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Group_incl");
	int *w = malloc((size_t)(n ? n : 1) * sizeof(int));
	if (!w)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Group_incl");
	for (int i = 0; i < n; i++) {
		bool dup = false;
		for (int k = 0; k < i; k++)
			dup = dup || ranks[k] == ranks[i];
		if (ranks[i] < 0 || ranks[i] >= size || dup) {
			free(w);
			return bcs_err(MPI_COMM_WORLD, MPI_ERR_RANK, "MPI_Group_incl");
		}
		w[i] = from[ranks[i]];
	}
	*newgroup = group_new(n, w);
	return *newgroup ? MPI_SUCCESS : bcs_err(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Group_incl");
}

int MPI_Group_size(MPI_Group group, int *size)
{
	if (!bcs_group_world(group, size))
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_GROUP, "MPI_Group_size");
	return MPI_SUCCESS;
}

int MPI_Group_rank(MPI_Group group, int *rank)
{
	int n, me;
	const int *w = bcs_group_world(group, &n);
	if (!w)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_GROUP, "MPI_Group_rank");
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	*rank = MPI_UNDEFINED;
	for (int i = 0; i < n; i++)
		if (w[i] == me)
			*rank = i;
	return MPI_SUCCESS;
}

int MPI_Group_free(MPI_Group *group)
{
	if (*group <= 0 || *group >= MAX_GROUPS || !groups[*group].used)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_GROUP, "MPI_Group_free");
	free(groups[*group].world);
	memset(&groups[*group], 0, sizeof(groups[0]));
	*group = MPI_GROUP_NULL;
	return MPI_SUCCESS;
}
