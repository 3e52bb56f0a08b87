// Linux interfaces that Swift's Glibc module does not export, used only by TransportBase's sockets:
// epoll for the event loop, and accept4 (a _GNU_SOURCE function) to accept with close-on-exec set
// atomically.
#include <sys/epoll.h>
#include <sys/socket.h>

int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);

static inline int cepoll_accept_cloexec_nonblock(int fd) {
    return accept4(fd, 0, 0, SOCK_CLOEXEC | SOCK_NONBLOCK);
}
