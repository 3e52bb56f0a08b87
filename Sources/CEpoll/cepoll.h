// Linux epoll, which Swift's Glibc module does not export; used only by TransportBase's event loop.
#include <sys/epoll.h>
