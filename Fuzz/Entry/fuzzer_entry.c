// Why this exists: SwiftPM always gives an executable a `main` of its own, which would shadow
// libFuzzer's. So the executable's main calls here, and libFuzzer's driver is reached through a
// weak reference that is non-null exactly when -sanitize=fuzzer linked the libFuzzer runtime.
#include <stdio.h>
#include <stdlib.h>
#include "FuzzerEntry.h"

extern int LLVMFuzzerRunDriver(int *argc, char ***argv, postern_fuzz_callback callback) __attribute__((weak));

int postern_fuzzer_main(int argc, char **argv, postern_fuzz_callback callback) {
    if (LLVMFuzzerRunDriver) {
        return LLVMFuzzerRunDriver(&argc, &argv, callback);
    }
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE...  (replay inputs; build with -Xswiftc -sanitize=fuzzer to fuzz)\n", argv[0]);
        return 64;
    }
    for (int index = 1; index < argc; index++) {
        FILE *file = fopen(argv[index], "rb");
        if (!file) { fprintf(stderr, "%s: cannot open\n", argv[index]); return 1; }
        size_t capacity = 1 << 16, size = 0, got;
        unsigned char *data = malloc(capacity);
        while (data && (got = fread(data + size, 1, capacity - size, file)) > 0) {
            size += got;
            if (size == capacity) { capacity *= 2; data = realloc(data, capacity); }
        }
        fclose(file);
        if (!data) { fprintf(stderr, "out of memory\n"); return 1; }
        callback(data, size);
        free(data);
        fprintf(stderr, "%s: ok (%zu bytes)\n", argv[index], size);
    }
    return 0;
}
