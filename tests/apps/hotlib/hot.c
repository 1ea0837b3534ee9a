/* A library whose time goes to two internal (static) functions: once stripped, only hot_run keeps a
 * name (.dynsym), so nsys shows the samples in mix_rows and fold_columns as bare addresses. */
#include <stdint.h>

__attribute__((noinline)) static uint64_t mix_rows(uint64_t x, int n) {
    for (int i = 0; i < n; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}

__attribute__((noinline)) static uint64_t fold_columns(uint64_t x, int n) {
    for (int i = 0; i < n; i++) x ^= (x << 13) ^ (x >> 7) ^ (x << 17);
    return x;
}

uint64_t hot_run(int rounds) {
    uint64_t x = 1;
    for (int r = 0; r < rounds; r++) {
        x = mix_rows(x, 3000000);
        x = fold_columns(x, 1000000);
    }
    return x;
}
