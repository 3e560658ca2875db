/* Runs libFuzzer harnesses without libFuzzer: each argument is a file or a
 * directory of files, each file one input to LLVMFuzzerTestOneInput. Built
 * with the ordinary compiler and ASan+UBSan, so `make check` replays the
 * seed corpora and every regression input without clang. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "fuzz driver: %s: %s\n", path, strerror(errno));
		return -1;
	}
	size_t cap = 4096, len = 0;
	uint8_t *buf = malloc(cap);
	size_t n;
	while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap) {
			uint8_t *b = realloc(buf, cap *= 2);
			if (!b) {
				free(buf);
				buf = NULL;
			}
			buf = b;
		}
	}
	fclose(f);
	if (!buf) {
		fprintf(stderr, "fuzz driver: %s: out of memory\n", path);
		return -1;
	}
	/* an exact-size copy, so ASan sees a read one byte past the input */
	uint8_t *exact = malloc(len ? len : 1);
	memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	int files = 0, bad = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "fuzz driver: %s: %s\n", argv[i], strerror(errno));
			return 2;
		}
		if (!S_ISDIR(st.st_mode)) {
			bad |= run_file(argv[i]) < 0;
			files++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		if (!d) {
			fprintf(stderr, "fuzz driver: %s: %s\n", argv[i], strerror(errno));
			return 2;
		}
		char **names = NULL;
		size_t n = 0;
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char **nn = realloc(names, (n + 1) * sizeof(*names));
			if (!nn)
				return 2;
			names = nn;
			if (asprintf(&names[n], "%s/%s", argv[i], e->d_name) < 0)
				return 2;
			n++;
		}
		closedir(d);
		qsort(names, n, sizeof(*names), cmp); /* a stable order for a failure's report */
		for (size_t k = 0; k < n; k++) {
			bad |= run_file(names[k]) < 0;
			files++;
			free(names[k]);
		}
		free(names);
	}
	/* a harness that fails a property aborts above, so reaching here is a pass */
	printf("%s: %d inputs passed\n", argv[0], files);
	return bad ? 2 : 0;
}
