// zlib (Debian zlib1g-dev): inflating a gzip-encoded broker answer, which the broker, a front or the
// AMP cache may send because the poll asks for it with Accept-Encoding: gzip, as Go's client does.
// One call inflates a whole body into a buffer the caller sized: the output can never pass it.
#ifndef POSTERN_CZLIB_H
#define POSTERN_CZLIB_H
#include <limits.h>
#include <string.h>
#include <zlib.h>

enum {
    POSTERN_GUNZIP_OK = 0,
    /// The output filled the buffer: the body inflates to more than the caller allows.
    POSTERN_GUNZIP_TOO_LARGE = 1,
    /// Not gzip, a bad checksum, truncated, or bytes after the last member that are not one.
    POSTERN_GUNZIP_MALFORMED = 2,
    POSTERN_GUNZIP_NO_MEMORY = 3,
};

/// Inflates the gzip members in `input` (several back to back, as Go's reader accepts) into
/// `output`. TOO_LARGE as soon as `output_capacity` bytes are written, so a caller that wants at
/// most N bytes passes N + 1. `*output_length` is what was written.
static inline int postern_gunzip(const unsigned char *input, size_t input_length, unsigned char *output,
                                  size_t output_capacity, size_t *output_length) {
    *output_length = 0;
    if (input_length > UINT_MAX || output_capacity > UINT_MAX) return POSTERN_GUNZIP_TOO_LARGE;
    z_stream stream;
    memset(&stream, 0, sizeof stream);
    if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) return POSTERN_GUNZIP_NO_MEMORY;
    stream.next_in = (Bytef *)input;
    stream.avail_in = (uInt)input_length;
    stream.next_out = output;
    stream.avail_out = (uInt)output_capacity;
    int result;
    for (;;) {
        int status = inflate(&stream, Z_NO_FLUSH);
        if (stream.avail_out == 0) { result = POSTERN_GUNZIP_TOO_LARGE; break; }
        if (status == Z_STREAM_END) {
            if (stream.avail_in == 0) { result = POSTERN_GUNZIP_OK; break; }
            if (inflateReset(&stream) != Z_OK) { result = POSTERN_GUNZIP_MALFORMED; break; }
            continue;
        }
        if (status == Z_OK && stream.avail_in > 0) continue;
        result = status == Z_MEM_ERROR ? POSTERN_GUNZIP_NO_MEMORY : POSTERN_GUNZIP_MALFORMED;
        break;
    }
    *output_length = output_capacity - stream.avail_out;
    inflateEnd(&stream);
    return result;
}
#endif
