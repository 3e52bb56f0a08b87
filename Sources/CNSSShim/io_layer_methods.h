// Internal to CNSSShim (not in include/): the NSPR I/O methods its two bottom layers share.
#ifndef POSTERN_IO_LAYER_METHODS_H
#define POSTERN_IO_LAYER_METHODS_H

#include <prio.h>

/// Fills every method of `m` that memory_layer.c (TLS) and datagram_layer.c (DTLS) answer the
/// same way: shutdown, socket options set (accepted, ignored), poll (never ready: NSS is driven
/// by its owner, not by polling), the unspecified IPv4 address as both ends' address, and every
/// call NSS does not make on a connected non-blocking socket (PR_NOT_IMPLEMENTED_ERROR). The
/// caller sets file_type, close, read, write, available, available64, recv, send and
/// getsocketoption.
void postern_io_layer_common_methods(PRIOMethods *m);

#endif
