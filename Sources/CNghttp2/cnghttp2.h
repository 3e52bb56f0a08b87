// libnghttp2 (Debian libnghttp2-dev): the HTTP/2 framing, HPACK and flow control under
// TransportWire's HTTP2Connection. Postern drives it with nghttp2_session_mem_recv/mem_send only,
// so it never touches a socket.
#include <nghttp2/nghttp2.h>
