#ifndef POSTERN_FUZZER_ENTRY_H
#define POSTERN_FUZZER_ENTRY_H
#include <stddef.h>
#include <stdint.h>

typedef int (*postern_fuzz_callback)(const uint8_t *data, size_t size);

/// Runs libFuzzer when the binary was linked with -sanitize=fuzzer; otherwise replays each file
/// named in argv through the callback once (so crash inputs can be re-run in a normal build).
int postern_fuzzer_main(int argc, char **argv, postern_fuzz_callback callback);

#endif
