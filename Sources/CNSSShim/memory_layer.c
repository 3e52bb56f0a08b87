// A bottom NSPR I/O layer over two memory buffers. NSS's SSL layer sits on top and calls recv
// and send here; the Swift stream moves bytes between these buffers and its own socket. Only the
// calls NSS makes on a connected, non-blocking stream socket are real; the rest fail with
// PR_NOT_IMPLEMENTED_ERROR.
#include "cnssshim.h"
#include "io_layer_methods.h"
#include <nss.h>
#include <prerror.h>
#include <prnetdb.h>
#include <ssl.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

struct PRFilePrivate {
    uint8_t *in;
    size_t in_start, in_end, in_size;
    int in_ended;
    uint8_t *out;
    size_t out_count, out_size;
};

static PRDescIdentity memory_identity = PR_INVALID_IO_LAYER;
static PRIOMethods memory_methods;

static struct PRFilePrivate *buffers(PRFileDesc *socket) {
    if (socket == NULL || memory_identity == PR_INVALID_IO_LAYER) return NULL;
    PRFileDesc *layer = PR_GetIdentitiesLayer(socket, memory_identity);
    return layer == NULL ? NULL : layer->secret;
}

/// Grows `*buffer` to hold at least `needed` bytes (doubling); 0 when memory is short.
static int reserve(uint8_t **buffer, size_t *size, size_t needed) {
    if (needed <= *size) return 1;
    size_t grown = *size == 0 ? 4096 : *size;
    while (grown < needed) grown *= 2;
    uint8_t *bigger = realloc(*buffer, grown);
    if (bigger == NULL) return 0;
    *buffer = bigger;
    *size = grown;
    return 1;
}

static PRStatus memory_close(PRFileDesc *fd) {
    struct PRFilePrivate *b = fd->secret;
    if (b != NULL) {
        free(b->in);
        free(b->out);
        free(b);
        fd->secret = NULL;
    }
    fd->dtor(fd);
    return PR_SUCCESS;
}

static PRInt32 memory_recv(PRFileDesc *fd, void *buf, PRInt32 amount, PRIntn flags, PRIntervalTime timeout) {
    (void)timeout;
    struct PRFilePrivate *b = fd->secret;
    if (amount < 0) { PR_SetError(PR_INVALID_ARGUMENT_ERROR, 0); return -1; }
    size_t available = b->in_end - b->in_start;
    if (available == 0) {
        if (b->in_ended) return 0;
        PR_SetError(PR_WOULD_BLOCK_ERROR, 0);
        return -1;
    }
    size_t count = (size_t)amount < available ? (size_t)amount : available;
    memcpy(buf, b->in + b->in_start, count);
    if (!(flags & PR_MSG_PEEK)) {
        b->in_start += count;
        if (b->in_start == b->in_end) b->in_start = b->in_end = 0;
    }
    return (PRInt32)count;
}

static PRInt32 memory_send(PRFileDesc *fd, const void *buf, PRInt32 amount, PRIntn flags, PRIntervalTime timeout) {
    (void)flags; (void)timeout;
    struct PRFilePrivate *b = fd->secret;
    if (amount < 0) { PR_SetError(PR_INVALID_ARGUMENT_ERROR, 0); return -1; }
    size_t room = POSTERN_NSS_OUTBOUND_CAPACITY - b->out_count;
    if (room == 0) { PR_SetError(PR_WOULD_BLOCK_ERROR, 0); return -1; }
    size_t count = (size_t)amount < room ? (size_t)amount : room;
    if (!reserve(&b->out, &b->out_size, b->out_count + count)) { PR_SetError(PR_OUT_OF_MEMORY_ERROR, 0); return -1; }
    memcpy(b->out + b->out_count, buf, count);
    b->out_count += count;
    return (PRInt32)count;
}

static PRInt32 memory_read(PRFileDesc *fd, void *buf, PRInt32 amount) {
    return memory_recv(fd, buf, amount, 0, PR_INTERVAL_NO_WAIT);
}

static PRInt32 memory_write(PRFileDesc *fd, const void *buf, PRInt32 amount) {
    return memory_send(fd, buf, amount, 0, PR_INTERVAL_NO_WAIT);
}

static PRInt32 memory_available(PRFileDesc *fd) {
    struct PRFilePrivate *b = fd->secret;
    return (PRInt32)(b->in_end - b->in_start);
}

static PRInt64 memory_available64(PRFileDesc *fd) { return memory_available(fd); }

static PRStatus memory_get_option(PRFileDesc *fd, PRSocketOptionData *data) {
    (void)fd;
    switch (data->option) {
    case PR_SockOpt_Nonblocking: data->value.non_blocking = PR_TRUE; return PR_SUCCESS;
    case PR_SockOpt_NoDelay: data->value.no_delay = PR_TRUE; return PR_SUCCESS;
    default: PR_SetError(PR_NOT_IMPLEMENTED_ERROR, 0); return PR_FAILURE;
    }
}

static pthread_once_t methods_once = PTHREAD_ONCE_INIT;

static void make_methods(void) {
    memory_identity = PR_GetUniqueIdentity("postern-memory");
    PRIOMethods *m = &memory_methods;
    m->file_type = PR_DESC_SOCKET_TCP;
    m->close = memory_close;
    m->read = memory_read;
    m->write = memory_write;
    m->available = memory_available;
    m->available64 = memory_available64;
    m->recv = memory_recv;
    m->send = memory_send;
    m->getsocketoption = memory_get_option;
    postern_io_layer_common_methods(m);
}

PRFileDesc *postern_nss_memory_client_socket(void) {
    if (postern_nss_initialize() != NULL) return NULL;
    pthread_once(&methods_once, make_methods);
    if (memory_identity == PR_INVALID_IO_LAYER) return NULL;
    struct PRFilePrivate *b = calloc(1, sizeof *b);
    if (b == NULL) return NULL;
    PRFileDesc *layer = PR_CreateIOLayerStub(memory_identity, &memory_methods);
    if (layer == NULL) { free(b); return NULL; }
    layer->secret = b;
    // SSL_ImportFD pushes NSS's SSL layer on top; from here PR_Close of the result frees both.
    PRFileDesc *ssl = SSL_ImportFD(NULL, layer);
    if (ssl == NULL) {
        memory_close(layer);
        return NULL;
    }
    if (SSL_OptionSet(ssl, SSL_SECURITY, PR_TRUE) != SECSuccess
        || SSL_OptionSet(ssl, SSL_HANDSHAKE_AS_CLIENT, PR_TRUE) != SECSuccess) {
        PR_Close(ssl);
        return NULL;
    }
    return ssl;
}

int postern_nss_feed(PRFileDesc *socket, const uint8_t *bytes, size_t count) {
    struct PRFilePrivate *b = buffers(socket);
    if (b == NULL) return 0;
    size_t held = b->in_end - b->in_start;
    if (count > POSTERN_NSS_INBOUND_CAPACITY - held) return 0;
    if (b->in_start > 0) {  // keep the unread bytes at the front so the buffer never creeps
        memmove(b->in, b->in + b->in_start, held);
        b->in_start = 0;
        b->in_end = held;
    }
    if (!reserve(&b->in, &b->in_size, held + count)) return 0;
    if (count > 0) memcpy(b->in + b->in_end, bytes, count);
    b->in_end += count;
    return 1;
}

void postern_nss_feed_end(PRFileDesc *socket) {
    struct PRFilePrivate *b = buffers(socket);
    if (b != NULL) b->in_ended = 1;
}

size_t postern_nss_inbound_count(PRFileDesc *socket) {
    struct PRFilePrivate *b = buffers(socket);
    return b == NULL ? 0 : b->in_end - b->in_start;
}

size_t postern_nss_outbound_count(PRFileDesc *socket) {
    struct PRFilePrivate *b = buffers(socket);
    return b == NULL ? 0 : b->out_count;
}

size_t postern_nss_take_outbound(PRFileDesc *socket, uint8_t *out, size_t capacity) {
    struct PRFilePrivate *b = buffers(socket);
    if (b == NULL) return 0;
    size_t count = b->out_count < capacity ? b->out_count : capacity;
    memcpy(out, b->out, count);
    memmove(b->out, b->out + count, b->out_count - count);
    b->out_count -= count;
    return count;
}
