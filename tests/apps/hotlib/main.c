/* Runs the library, then prints where the loader put it (dladdr), for the test to hold the load address
 * orchestrate infers from the report against. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

uint64_t hot_run(int rounds);

int main(int argc, char **argv) {
    uint64_t x = hot_run(argc > 1 ? atoi(argv[1]) : 100);
    Dl_info info;
    if (!dladdr((void *)hot_run, &info)) return 1;
    printf("{\"result\": %llu, \"load_address\": \"%p\"}\n", (unsigned long long)x, info.dli_fbase);
    return 0;
}
