// usrsctp (Debian libusrsctp-dev) for the snowflake transport's data channel: SCTP over DTLS in
// AF_CONN mode (we move the packets). No global state here: every callback finds its endpoint
// through the address usrsctp hands back (the registered pointer, or the socket's ulp_info).
// Nothing is linked: usrsctp is dlopened by CSnowflakeLibraries on the first snowflake connection.
#ifndef POSTERN_CUSRSCTP_H
#define POSTERN_CUSRSCTP_H
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <usrsctp.h>

typedef int (*postern_sctp_output_fn)(void *user, const void *packet, size_t length);
typedef void (*postern_sctp_message_fn)(void *user, const void *data, size_t length, uint16_t stream,
                                        uint32_t ppid, int notification);

typedef struct {
    postern_sctp_output_fn output;
    postern_sctp_message_fn message;
    void *user;
} postern_sctp_endpoint;

static int postern_sctp__output(void *address, void *packet, size_t length, uint8_t tos, uint8_t set_df) {
    (void)tos; (void)set_df;
    postern_sctp_endpoint *endpoint = address;
    return endpoint->output(endpoint->user, packet, length);
}

static int postern_sctp__receive(struct socket *sock, union sctp_sockstore address, void *data, size_t length,
                                 struct sctp_rcvinfo info, int flags, void *ulp_info) {
    (void)sock; (void)address;
    postern_sctp_endpoint *endpoint = ulp_info;
    if (data != NULL) {
        endpoint->message(endpoint->user, data, length, info.rcv_sid, ntohl(info.rcv_ppid),
                          (flags & MSG_NOTIFICATION) != 0);
        free(data);
    } else {
        endpoint->message(endpoint->user, NULL, 0, 0, 0, -1);  // the association is gone
    }
    return 1;
}

/// Once per process, before any socket.
static inline void postern_sctp_initialize(void) {
    usrsctp_init(0, postern_sctp__output, NULL);
    usrsctp_sysctl_set_sctp_ecn_enable(0);
}

/// A one-to-one SCTP socket on `endpoint`, port 5000 both ends (WebRTC), connecting (the peer
/// connects too; SCTP resolves the collision). NULL on failure.
static inline struct socket *postern_sctp_open(postern_sctp_endpoint *endpoint, uint16_t port) {
    usrsctp_register_address(endpoint);
    struct socket *sock = usrsctp_socket(AF_CONN, SOCK_STREAM, IPPROTO_SCTP, postern_sctp__receive, NULL, 0, endpoint);
    if (sock == NULL) { usrsctp_deregister_address(endpoint); return NULL; }
    int on = 1;
    struct sctp_initmsg init = { .sinit_num_ostreams = 1024, .sinit_max_instreams = 1024 };
    struct sctp_event event = { .se_assoc_id = SCTP_ALL_ASSOC, .se_on = 1, .se_type = SCTP_ASSOC_CHANGE };
    struct linger linger = { .l_onoff = 1, .l_linger = 0 };
    if (usrsctp_set_non_blocking(sock, 1) < 0
        || usrsctp_setsockopt(sock, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof on) < 0
        || usrsctp_setsockopt(sock, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof on) < 0
        || usrsctp_setsockopt(sock, IPPROTO_SCTP, SCTP_INITMSG, &init, sizeof init) < 0
        || usrsctp_setsockopt(sock, IPPROTO_SCTP, SCTP_EVENT, &event, sizeof event) < 0
        || usrsctp_setsockopt(sock, SOL_SOCKET, SO_LINGER, &linger, sizeof linger) < 0) {
        usrsctp_close(sock);
        usrsctp_deregister_address(endpoint);
        return NULL;
    }
    struct sockaddr_conn local;
    memset(&local, 0, sizeof local);
    local.sconn_family = AF_CONN;
    local.sconn_port = htons(port);
    local.sconn_addr = endpoint;
    if (usrsctp_bind(sock, (struct sockaddr *)&local, sizeof local) < 0
        || (usrsctp_connect(sock, (struct sockaddr *)&local, sizeof local) < 0 && errno != EINPROGRESS)) {
        usrsctp_close(sock);
        usrsctp_deregister_address(endpoint);
        return NULL;
    }
    return sock;
}

/// One packet from the peer (decrypted DTLS application data).
static inline void postern_sctp_input(postern_sctp_endpoint *endpoint, const void *packet, size_t length) {
    usrsctp_conninput(endpoint, packet, length, 0);
}

/// One ordered, reliable message; -1 with errno (EWOULDBLOCK when the send buffer is full).
static inline ssize_t postern_sctp_send(struct socket *sock, const void *data, size_t length, uint16_t stream, uint32_t ppid) {
    struct sctp_sndinfo info;
    memset(&info, 0, sizeof info);
    info.snd_sid = stream;
    info.snd_flags = SCTP_EOR;
    info.snd_ppid = htonl(ppid);
    return usrsctp_sendv(sock, data, length, NULL, 0, &info, sizeof info, SCTP_SENDV_SNDINFO, 0);
}

static inline void postern_sctp_close(struct socket *sock, postern_sctp_endpoint *endpoint) {
    usrsctp_shutdown(sock, SHUT_RDWR);
    usrsctp_close(sock);
    usrsctp_deregister_address(endpoint);
}

static inline int postern_errno(void) { return errno; }
#endif
