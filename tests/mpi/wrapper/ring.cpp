// A C++ program on MPI's C API (no C++ bindings) for bcs-mpicxx: standard
// containers, a class and an exception around the calls; rank 0 prints
// what went round the ring and the gathered names, in rank order.
#include <mpi.h>

#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

class World {
public:
	World(int *argc, char ***argv)
	{
		if (MPI_Init(argc, argv) != MPI_SUCCESS)
			throw std::runtime_error("MPI_Init failed");
		MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
		MPI_Comm_size(MPI_COMM_WORLD, &size_);
	}
	~World() { MPI_Finalize(); }
	World(const World &) = delete;
	World &operator=(const World &) = delete;
	int rank() const { return rank_; }
	int size() const { return size_; }

private:
	int rank_ = 0, size_ = 1;
};

// each rank appends its rank to the list it got from its left neighbour
std::vector<int> ring(const World &w)
{
	std::vector<int> seen;
	const int right = (w.rank() + 1) % w.size(), left = (w.rank() + w.size() - 1) % w.size();
	if (w.rank() != 0) {
		MPI_Status st;
		int n = 0;
		MPI_Probe(left, 7, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_INT, &n);
		seen.resize(static_cast<std::size_t>(n));
		MPI_Recv(seen.data(), n, MPI_INT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	seen.push_back(w.rank());
	if (w.size() > 1) {
		MPI_Send(seen.data(), static_cast<int>(seen.size()), MPI_INT, right, 7, MPI_COMM_WORLD);
		if (w.rank() == 0) {
			seen.resize(static_cast<std::size_t>(w.size()));
			MPI_Recv(seen.data(), w.size(), MPI_INT, left, 7, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		}
	}
	return seen;
}

} // namespace

int main(int argc, char **argv)
{
	try {
		World w(&argc, &argv);
		std::vector<int> seen = ring(w);

		std::string name = "rank-" + std::to_string(w.rank());
		name.resize(8, '.');
		std::vector<char> all(static_cast<std::size_t>(8 * w.size()));
		MPI_Gather(name.data(), 8, MPI_CHAR, all.data(), 8, MPI_CHAR, 0, MPI_COMM_WORLD);

		double mine = 0.5 * w.rank(), total = 0;
		MPI_Allreduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		if (w.rank() == 0) {
			std::string path;
			for (int r : seen)
				path += (path.empty() ? "" : " -> ") + std::to_string(r);
			std::printf("ring (C++): %d ranks, path %s\n", w.size(), path.c_str());
			std::printf("ring (C++): names %s\n", std::string(all.begin(), all.end()).c_str());
			std::printf("ring (C++): sum %.1f, expected %.1f\n", total,
				    0.5 * std::accumulate(seen.begin(), seen.end(), 0));
		}
	} catch (const std::exception &e) {
		std::fprintf(stderr, "ring: %s\n", e.what());
		return 1;
	}
	return 0;
}
