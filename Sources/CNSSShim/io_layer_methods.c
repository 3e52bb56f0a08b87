// The NSPR I/O methods memory_layer.c and datagram_layer.c share (io_layer_methods.h).
#include "io_layer_methods.h"
#include <prerror.h>
#include <string.h>

static PRStatus layer_shutdown(PRFileDesc *fd, PRIntn how) { (void)fd; (void)how; return PR_SUCCESS; }

/// There is no real address here; NSS asks for the peer's (for its session cache, which Postern
/// switches off), so the layer answers with the unspecified IPv4 address.
static PRStatus layer_address(PRFileDesc *fd, PRNetAddr *addr) {
    (void)fd;
    memset(addr, 0, sizeof *addr);
    addr->inet.family = PR_AF_INET;
    return PR_SUCCESS;
}

static PRStatus layer_set_option(PRFileDesc *fd, const PRSocketOptionData *data) {
    (void)fd; (void)data;
    return PR_SUCCESS;
}

static PRInt16 layer_poll(PRFileDesc *fd, PRInt16 in_flags, PRInt16 *out_flags) {
    (void)fd;
    *out_flags = 0;
    return in_flags;
}

static PRStatus not_implemented(void) { PR_SetError(PR_NOT_IMPLEMENTED_ERROR, 0); return PR_FAILURE; }
static PRStatus layer_fsync(PRFileDesc *fd) { (void)fd; return not_implemented(); }
static PRInt32 layer_seek(PRFileDesc *fd, PRInt32 offset, PRSeekWhence how) { (void)fd; (void)offset; (void)how; not_implemented(); return -1; }
static PRInt64 layer_seek64(PRFileDesc *fd, PRInt64 offset, PRSeekWhence how) { (void)fd; (void)offset; (void)how; not_implemented(); return -1; }
static PRStatus layer_file_info(PRFileDesc *fd, PRFileInfo *info) { (void)fd; (void)info; return not_implemented(); }
static PRStatus layer_file_info64(PRFileDesc *fd, PRFileInfo64 *info) { (void)fd; (void)info; return not_implemented(); }
static PRInt32 layer_writev(PRFileDesc *fd, const PRIOVec *iov, PRInt32 size, PRIntervalTime timeout) {
    (void)fd; (void)iov; (void)size; (void)timeout; not_implemented(); return -1;
}
static PRStatus layer_connect(PRFileDesc *fd, const PRNetAddr *addr, PRIntervalTime timeout) {
    (void)fd; (void)addr; (void)timeout; return not_implemented();
}
static PRFileDesc *layer_accept(PRFileDesc *fd, PRNetAddr *addr, PRIntervalTime timeout) {
    (void)fd; (void)addr; (void)timeout; not_implemented(); return NULL;
}
static PRStatus layer_bind(PRFileDesc *fd, const PRNetAddr *addr) { (void)fd; (void)addr; return not_implemented(); }
static PRStatus layer_listen(PRFileDesc *fd, PRIntn backlog) { (void)fd; (void)backlog; return not_implemented(); }
static PRInt32 layer_recvfrom(PRFileDesc *fd, void *buf, PRInt32 amount, PRIntn flags, PRNetAddr *addr, PRIntervalTime timeout) {
    (void)fd; (void)buf; (void)amount; (void)flags; (void)addr; (void)timeout; not_implemented(); return -1;
}
static PRInt32 layer_sendto(PRFileDesc *fd, const void *buf, PRInt32 amount, PRIntn flags, const PRNetAddr *addr, PRIntervalTime timeout) {
    (void)fd; (void)buf; (void)amount; (void)flags; (void)addr; (void)timeout; not_implemented(); return -1;
}
static PRInt32 layer_acceptread(PRFileDesc *sd, PRFileDesc **nd, PRNetAddr **raddr, void *buf, PRInt32 amount, PRIntervalTime t) {
    (void)sd; (void)nd; (void)raddr; (void)buf; (void)amount; (void)t; not_implemented(); return -1;
}
static PRInt32 layer_transmitfile(PRFileDesc *sd, PRFileDesc *fd, const void *headers, PRInt32 hlen, PRTransmitFileFlags flags, PRIntervalTime t) {
    (void)sd; (void)fd; (void)headers; (void)hlen; (void)flags; (void)t; not_implemented(); return -1;
}
static PRInt32 layer_sendfile(PRFileDesc *sd, PRSendFileData *data, PRTransmitFileFlags flags, PRIntervalTime t) {
    (void)sd; (void)data; (void)flags; (void)t; not_implemented(); return -1;
}
static PRStatus layer_connectcontinue(PRFileDesc *fd, PRInt16 flags) { (void)fd; (void)flags; return not_implemented(); }
static PRIntn layer_reserved(PRFileDesc *fd) { (void)fd; not_implemented(); return -1; }

void postern_io_layer_common_methods(PRIOMethods *m) {
    m->fsync = layer_fsync;
    m->seek = layer_seek;
    m->seek64 = layer_seek64;
    m->fileInfo = layer_file_info;
    m->fileInfo64 = layer_file_info64;
    m->writev = layer_writev;
    m->connect = layer_connect;
    m->accept = layer_accept;
    m->bind = layer_bind;
    m->listen = layer_listen;
    m->shutdown = layer_shutdown;
    m->recvfrom = layer_recvfrom;
    m->sendto = layer_sendto;
    m->poll = layer_poll;
    m->acceptread = layer_acceptread;
    m->transmitfile = layer_transmitfile;
    m->getsockname = layer_address;
    m->getpeername = layer_address;
    m->reserved_fn_6 = layer_reserved;
    m->reserved_fn_5 = layer_reserved;
    m->setsocketoption = layer_set_option;
    m->sendfile = layer_sendfile;
    m->connectcontinue = layer_connectcontinue;
    m->reserved_fn_3 = layer_reserved;
    m->reserved_fn_2 = layer_reserved;
    m->reserved_fn_1 = layer_reserved;
    m->reserved_fn_0 = layer_reserved;
}
