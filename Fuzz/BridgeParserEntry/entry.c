// Entry point of the BridgeParserFuzzer executable.
//
// SwiftPM links every executable with `--defsym main=<Module>_main`, so this function is `main`.
// Built with `-Xswiftc -sanitize=fuzzer`, libFuzzer is linked in and LLVMFuzzerRunDriver (a weak
// reference here) is non-null: we hand control to libFuzzer. In a plain build it is null, and the
// program instead replays the files named on the command line once each, so that
// `swift build` of the whole package still links and a crash input can be re-run without libFuzzer.
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern int LLVMFuzzerRunDriver(int *argc, char ***argv,
                               int (*callback)(const uint8_t *data, size_t size)) __attribute__((weak));

int BridgeParserFuzzer_main(int argc, char **argv) {
    if (LLVMFuzzerRunDriver) {
        return LLVMFuzzerRunDriver(&argc, &argv, LLVMFuzzerTestOneInput);
    }
    for (int index = 1; index < argc; index++) {
        FILE *file = fopen(argv[index], "rb");
        if (!file) { perror(argv[index]); return 1; }
        size_t capacity = 1 << 16, size = 0;
        uint8_t *buffer = malloc(capacity);
        size_t count;
        while (buffer && (count = fread(buffer + size, 1, capacity - size, file)) > 0) {
            size += count;
            if (size == capacity) { capacity *= 2; buffer = realloc(buffer, capacity); }
        }
        fclose(file);
        if (!buffer) { fputs("out of memory\n", stderr); return 1; }
        LLVMFuzzerTestOneInput(buffer, size);
        free(buffer);
        printf("replayed %s (%zu bytes)\n", argv[index], size);
    }
    return 0;
}
