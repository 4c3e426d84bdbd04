/* Libraries loaded on first use; see library.h. */
#define _GNU_SOURCE
#include "worker/library.h"

#include <dlfcn.h>
#include <stdio.h>

int library_load(const char *soname, const char *package, const char *const *names, void **const *slots, size_t n,
                 char *why, size_t why_len)
{
	void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		snprintf(why, why_len, "%s (Debian's %s) cannot be loaded: %s", soname, package, dlerror());
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (!(*slots[i] = dlsym(lib, names[i]))) {
			snprintf(why, why_len, "%s lacks %s", soname, names[i]);
			return -1;
		}
	return 0;
}
