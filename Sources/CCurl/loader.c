// See include/ccurl.h: libcurl opened with dlopen on first use. The forwarders have curl.h's own
// prototypes (a mismatch does not compile) and hidden visibility, so libcurl, dlopened
// RTLD_LOCAL, never resolves a name to them.
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#pragma GCC visibility push(hidden)
#include "ccurl.h"

#define POINTER(name) static __typeof__(name) *p_##name
POINTER(curl_easy_cleanup); POINTER(curl_easy_getinfo); POINTER(curl_easy_init); POINTER(curl_easy_perform);
POINTER(curl_easy_recv); POINTER(curl_easy_send); POINTER(curl_easy_setopt); POINTER(curl_easy_strerror);
POINTER(curl_global_init);

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const char *load_error;
static char load_message[512];

static void resolve(void *handle, const char *name, void **pointer) {
    if (load_error != NULL) return;
    *pointer = dlsym(handle, name);
    if (*pointer == NULL) {
        snprintf(load_message, sizeof load_message, "libcurl has no %s", name);
        load_error = load_message;
    }
}
#define RESOLVE(handle, name) resolve(handle, #name, (void **)&p_##name)

static void load(void) {
    // Debian's soname (libcurl4, the library libcurl4-openssl-dev links against).
    void *curl = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (curl == NULL) {
        snprintf(load_message, sizeof load_message, "libcurl.so.4 could not be loaded: %s", dlerror());
        load_error = load_message;
        return;
    }
    RESOLVE(curl, curl_easy_cleanup); RESOLVE(curl, curl_easy_getinfo); RESOLVE(curl, curl_easy_init);
    RESOLVE(curl, curl_easy_perform); RESOLVE(curl, curl_easy_recv); RESOLVE(curl, curl_easy_send);
    RESOLVE(curl, curl_easy_setopt); RESOLVE(curl, curl_easy_strerror); RESOLVE(curl, curl_global_init);
}

#pragma GCC visibility pop

const char *postern_curl_load(void) {
    pthread_once(&load_once, load);
    return load_error;
}

CURLcode postern_curl_setopt_long(CURL *handle, CURLoption option, long value) { return p_curl_easy_setopt(handle, option, value); }
CURLcode postern_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) { return p_curl_easy_setopt(handle, option, value); }
CURLcode postern_curl_setopt_write_function(CURL *handle, ccurl_write_callback callback) {
    return p_curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}
CURLcode postern_curl_setopt_opensocket_function(CURL *handle, ccurl_opensocket_callback callback) {
    return p_curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, callback);
}
CURLcode postern_curl_setopt_sockopt_function(CURL *handle, ccurl_sockopt_callback callback) {
    return p_curl_easy_setopt(handle, CURLOPT_SOCKOPTFUNCTION, callback);
}
CURLcode postern_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) { return p_curl_easy_getinfo(handle, info, value); }
CURLcode postern_curl_getinfo_socket(CURL *handle, curl_socket_t *value) {
    return p_curl_easy_getinfo(handle, CURLINFO_ACTIVESOCKET, value);
}

#pragma GCC visibility push(hidden)
void curl_easy_cleanup(CURL *curl) { p_curl_easy_cleanup(curl); }
CURL *curl_easy_init(void) { return p_curl_easy_init(); }
CURLcode curl_easy_perform(CURL *curl) { return p_curl_easy_perform(curl); }
CURLcode curl_easy_recv(CURL *curl, void *buffer, size_t buflen, size_t *n) { return p_curl_easy_recv(curl, buffer, buflen, n); }
CURLcode curl_easy_send(CURL *curl, const void *buffer, size_t buflen, size_t *n) { return p_curl_easy_send(curl, buffer, buflen, n); }
const char *curl_easy_strerror(CURLcode code) { return p_curl_easy_strerror(code); }
CURLcode curl_global_init(long flags) { return p_curl_global_init(flags); }
#pragma GCC visibility pop
