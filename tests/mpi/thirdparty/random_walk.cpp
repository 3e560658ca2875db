// An equivalent of mpitutorial's random_walk (our own code, C++ like the
// original): a 1-D domain split over the ranks; walkers of random length
// walk right, and cross to the next rank (wrapping at the domain's end)
// as they leave a subdomain. Even ranks send then receive, odd ones the
// other way round. Usage: random_walk domain_size max_walk_size
// num_walkers_per_proc [seed] (the original seeds with the time).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

namespace {

struct Walker {
	int location;
	int num_steps_left_in_walk;
};

void decompose_domain(int domain_size, int world_rank, int world_size, int *subdomain_start,
		      int *subdomain_size)
{
	if (world_size > domain_size) {
		// the walkers could skip a whole subdomain: not supported
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	*subdomain_start = domain_size / world_size * world_rank;
	*subdomain_size = domain_size / world_size;
	if (world_rank == world_size - 1)
		*subdomain_size += domain_size % world_size;
}

void initialize_walkers(int num_walkers_per_proc, int max_walk_size, int subdomain_start,
			std::vector<Walker> *incoming_walkers)
{
	for (int i = 0; i < num_walkers_per_proc; i++) {
		Walker walker;
		walker.location = subdomain_start;
		walker.num_steps_left_in_walk =
			static_cast<int>((std::rand() / static_cast<float>(RAND_MAX)) * max_walk_size);
		incoming_walkers->push_back(walker);
	}
}

void walk(Walker *walker, int subdomain_start, int subdomain_size, int domain_size,
	  std::vector<Walker> *outgoing_walkers)
{
	while (walker->num_steps_left_in_walk > 0) {
		if (walker->location == subdomain_start + subdomain_size) {
			if (walker->location == domain_size)
				walker->location = 0;
			outgoing_walkers->push_back(*walker);
			break;
		}
		walker->num_steps_left_in_walk--;
		walker->location++;
	}
}

void send_outgoing_walkers(std::vector<Walker> *outgoing_walkers, int world_rank, int world_size)
{
	MPI_Send(static_cast<void *>(outgoing_walkers->data()),
		 static_cast<int>(outgoing_walkers->size() * sizeof(Walker)), MPI_BYTE,
		 (world_rank + 1) % world_size, 0, MPI_COMM_WORLD);
	outgoing_walkers->clear();
}

void receive_incoming_walkers(std::vector<Walker> *incoming_walkers, int world_rank,
			      int world_size)
{
	MPI_Status status;
	int incoming_rank = (world_rank == 0) ? world_size - 1 : world_rank - 1;
	MPI_Probe(incoming_rank, 0, MPI_COMM_WORLD, &status);
	int incoming_walkers_size;
	MPI_Get_count(&status, MPI_BYTE, &incoming_walkers_size);
	incoming_walkers->resize(static_cast<std::size_t>(incoming_walkers_size) / sizeof(Walker));
	MPI_Recv(static_cast<void *>(incoming_walkers->data()), incoming_walkers_size, MPI_BYTE,
		 incoming_rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 4) {
		std::fprintf(stderr,
			     "usage: %s domain_size max_walk_size num_walkers_per_proc [seed]\n",
			     argv[0]);
		return 1;
	}
	int domain_size = std::atoi(argv[1]), max_walk_size = std::atoi(argv[2]);
	int num_walkers_per_proc = std::atoi(argv[3]);
	unsigned seed = argc > 4 ? static_cast<unsigned>(std::strtoul(argv[4], nullptr, 10))
				 : static_cast<unsigned>(std::time(nullptr));
	MPI_Init(&argc, &argv);
	int world_size, world_rank;
	MPI_Comm_size(MPI_COMM_WORLD, &world_size);
	MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);

	std::srand(seed * static_cast<unsigned>(world_rank));
	int subdomain_start, subdomain_size;
	std::vector<Walker> incoming_walkers, outgoing_walkers;
	decompose_domain(domain_size, world_rank, world_size, &subdomain_start, &subdomain_size);
	initialize_walkers(num_walkers_per_proc, max_walk_size, subdomain_start, &incoming_walkers);
	std::printf("Process %d initiated %d walkers in subdomain %d - %d\n", world_rank,
		    num_walkers_per_proc, subdomain_start, subdomain_start + subdomain_size - 1);

	// enough rounds for a walker of the longest walk to end
	int maximum_sends_recvs = max_walk_size / (domain_size / world_size) + 1;
	for (int m = 0; m < maximum_sends_recvs; m++) {
		for (Walker &w : incoming_walkers)
			walk(&w, subdomain_start, subdomain_size, domain_size, &outgoing_walkers);
		std::printf("Process %d sending %d outgoing walkers to process %d\n", world_rank,
			    static_cast<int>(outgoing_walkers.size()), (world_rank + 1) % world_size);
		if (world_rank % 2 == 0) {
			send_outgoing_walkers(&outgoing_walkers, world_rank, world_size);
			receive_incoming_walkers(&incoming_walkers, world_rank, world_size);
		} else {
			receive_incoming_walkers(&incoming_walkers, world_rank, world_size);
			send_outgoing_walkers(&outgoing_walkers, world_rank, world_size);
		}
		std::printf("Process %d received %d incoming walkers\n", world_rank,
			    static_cast<int>(incoming_walkers.size()));
	}
	std::printf("Process %d done\n", world_rank);
	MPI_Finalize();
	return 0;
}
