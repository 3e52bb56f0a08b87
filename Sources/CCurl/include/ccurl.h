// libcurl (Debian libcurl4-openssl-dev). curl_easy_setopt/getinfo are variadic, which Swift cannot
// call; these typed shims are the whole C surface PosternAppLayer uses.
//
// libcurl is not linked: loader.c opens it with dlopen when the first handle is made
// (postern_curl_load), so a run that never makes an HTTP request through the app layer maps
// neither it nor what it pulls in (GnuTLS via librtmp, Kerberos, LDAP, libssh2, nghttp2: about
// 4 MB of resident pages in `postern run`). The curl_* functions below resolve to loader.c's hidden
// forwarders; the variadic ones are reached only through the typed postern_curl_* entry points.
#ifndef POSTERN_CCURL_H
#define POSTERN_CCURL_H
#include <curl/curl.h>

/// Opens libcurl once per process; NULL on success, else why it failed. Call before any curl_*.
const char *postern_curl_load(void);

CURLcode postern_curl_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode postern_curl_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode postern_curl_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode postern_curl_getinfo_socket(CURL *handle, curl_socket_t *value);

typedef size_t (*ccurl_write_callback)(char *data, size_t size, size_t count, void *context);

CURLcode postern_curl_setopt_write_function(CURL *handle, ccurl_write_callback callback);

typedef curl_socket_t (*ccurl_opensocket_callback)(void *context, curlsocktype purpose, struct curl_sockaddr *address);
typedef int (*ccurl_sockopt_callback)(void *context, curl_socket_t socket, curlsocktype purpose);

CURLcode postern_curl_setopt_opensocket_function(CURL *handle, ccurl_opensocket_callback callback);
CURLcode postern_curl_setopt_sockopt_function(CURL *handle, ccurl_sockopt_callback callback);

static inline CURLcode ccurl_setopt_long(CURL *handle, CURLoption option, long value) {
    return postern_curl_setopt_long(handle, option, value);
}
static inline CURLcode ccurl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return postern_curl_setopt_pointer(handle, option, (void *)value);
}
static inline CURLcode ccurl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return postern_curl_setopt_pointer(handle, option, value);
}
static inline CURLcode ccurl_setopt_write_function(CURL *handle, ccurl_write_callback callback) {
    return postern_curl_setopt_write_function(handle, callback);
}
static inline CURLcode ccurl_setopt_opensocket_function(CURL *handle, ccurl_opensocket_callback callback) {
    return postern_curl_setopt_opensocket_function(handle, callback);
}
static inline CURLcode ccurl_setopt_sockopt_function(CURL *handle, ccurl_sockopt_callback callback) {
    return postern_curl_setopt_sockopt_function(handle, callback);
}
static inline CURLcode ccurl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return postern_curl_getinfo_long(handle, info, value);
}
static inline CURLcode ccurl_getinfo_socket(CURL *handle, curl_socket_t *value) {
    return postern_curl_getinfo_socket(handle, value);
}
#endif
