// See include/csnowflakelibraries.h. The prototypes come from the libraries' own headers, so a
// forwarder that does not match its library's signature does not compile. They are hidden so that
// nothing outside the executable (least of all the libraries themselves, which are dlopened
// RTLD_LOCAL) resolves a name to a forwarder.
#include "csnowflakelibraries.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#pragma GCC visibility push(hidden)
#include <agent.h>
#include <glib-object.h>
#include <usrsctp.h>

#define POINTER(name) static __typeof__(name) *p_##name

POINTER(g_free); POINTER(g_main_context_new); POINTER(g_main_context_pop_thread_default);
POINTER(g_main_context_push_thread_default); POINTER(g_main_context_unref); POINTER(g_main_context_wakeup);
POINTER(g_main_loop_new); POINTER(g_main_loop_quit); POINTER(g_main_loop_run); POINTER(g_main_loop_unref);
POINTER(g_slist_append); POINTER(g_slist_free_full);
POINTER(g_object_set_valist); POINTER(g_object_unref); POINTER(g_signal_connect_data);
POINTER(nice_address_init); POINTER(nice_address_set_from_string); POINTER(nice_agent_add_local_address);
POINTER(nice_agent_add_stream); POINTER(nice_agent_attach_recv); POINTER(nice_agent_gather_candidates);
POINTER(nice_agent_generate_local_candidate_sdp); POINTER(nice_agent_get_local_candidates); POINTER(nice_agent_new);
POINTER(nice_agent_parse_remote_candidate_sdp); POINTER(nice_agent_remove_stream); POINTER(nice_agent_send);
POINTER(nice_agent_set_local_credentials); POINTER(nice_agent_set_remote_candidates);
POINTER(nice_agent_set_remote_credentials); POINTER(nice_candidate_free);
POINTER(usrsctp_bind); POINTER(usrsctp_close); POINTER(usrsctp_connect); POINTER(usrsctp_conninput);
POINTER(usrsctp_deregister_address); POINTER(usrsctp_init); POINTER(usrsctp_register_address); POINTER(usrsctp_sendv);
POINTER(usrsctp_set_non_blocking); POINTER(usrsctp_setsockopt); POINTER(usrsctp_shutdown); POINTER(usrsctp_socket);
POINTER(usrsctp_sysctl_set_sctp_ecn_enable);

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const char *load_error;
static char load_message[512];

static void *open_library(const char *soname) {
    void *handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL && load_error == NULL) {
        snprintf(load_message, sizeof load_message, "%s could not be loaded: %s", soname, dlerror());
        load_error = load_message;
    }
    return handle;
}

static void resolve(void *handle, const char *soname, const char *name, void **pointer) {
    if (load_error != NULL) return;
    *pointer = dlsym(handle, name);
    if (*pointer == NULL) {
        snprintf(load_message, sizeof load_message, "%s has no %s", soname, name);
        load_error = load_message;
    }
}

#define RESOLVE(handle, soname, name) resolve(handle, soname, #name, (void **)&p_##name)

static void load(void) {
    // Debian's sonames (libglib2.0-0, libnice10, libusrsctp2), which the -dev packages the build
    // uses link against.
    static const char *const glib = "libglib-2.0.so.0", *const gobject = "libgobject-2.0.so.0",
                             *const nice = "libnice.so.10", *const sctp = "libusrsctp.so.2";
    void *g = open_library(glib), *o = open_library(gobject), *n = open_library(nice), *s = open_library(sctp);
    if (load_error != NULL) return;
    RESOLVE(g, glib, g_free); RESOLVE(g, glib, g_main_context_new); RESOLVE(g, glib, g_main_context_pop_thread_default);
    RESOLVE(g, glib, g_main_context_push_thread_default); RESOLVE(g, glib, g_main_context_unref);
    RESOLVE(g, glib, g_main_context_wakeup); RESOLVE(g, glib, g_main_loop_new); RESOLVE(g, glib, g_main_loop_quit);
    RESOLVE(g, glib, g_main_loop_run); RESOLVE(g, glib, g_main_loop_unref); RESOLVE(g, glib, g_slist_append);
    RESOLVE(g, glib, g_slist_free_full);
    RESOLVE(o, gobject, g_object_set_valist); RESOLVE(o, gobject, g_object_unref); RESOLVE(o, gobject, g_signal_connect_data);
    RESOLVE(n, nice, nice_address_init); RESOLVE(n, nice, nice_address_set_from_string);
    RESOLVE(n, nice, nice_agent_add_local_address); RESOLVE(n, nice, nice_agent_add_stream);
    RESOLVE(n, nice, nice_agent_attach_recv); RESOLVE(n, nice, nice_agent_gather_candidates);
    RESOLVE(n, nice, nice_agent_generate_local_candidate_sdp); RESOLVE(n, nice, nice_agent_get_local_candidates);
    RESOLVE(n, nice, nice_agent_new); RESOLVE(n, nice, nice_agent_parse_remote_candidate_sdp);
    RESOLVE(n, nice, nice_agent_remove_stream); RESOLVE(n, nice, nice_agent_send);
    RESOLVE(n, nice, nice_agent_set_local_credentials); RESOLVE(n, nice, nice_agent_set_remote_candidates);
    RESOLVE(n, nice, nice_agent_set_remote_credentials); RESOLVE(n, nice, nice_candidate_free);
    RESOLVE(s, sctp, usrsctp_bind); RESOLVE(s, sctp, usrsctp_close); RESOLVE(s, sctp, usrsctp_connect);
    RESOLVE(s, sctp, usrsctp_conninput); RESOLVE(s, sctp, usrsctp_deregister_address); RESOLVE(s, sctp, usrsctp_init);
    RESOLVE(s, sctp, usrsctp_register_address); RESOLVE(s, sctp, usrsctp_sendv); RESOLVE(s, sctp, usrsctp_set_non_blocking);
    RESOLVE(s, sctp, usrsctp_setsockopt); RESOLVE(s, sctp, usrsctp_shutdown); RESOLVE(s, sctp, usrsctp_socket);
    RESOLVE(s, sctp, usrsctp_sysctl_set_sctp_ecn_enable);
}

#pragma GCC visibility pop

const char *postern_snowflake_libraries_load(void) {
    pthread_once(&load_once, load);
    return load_error;
}

#pragma GCC visibility push(hidden)

// GLib / GObject
void g_free(gpointer mem) { p_g_free(mem); }
GMainContext *g_main_context_new(void) { return p_g_main_context_new(); }
void g_main_context_pop_thread_default(GMainContext *context) { p_g_main_context_pop_thread_default(context); }
void g_main_context_push_thread_default(GMainContext *context) { p_g_main_context_push_thread_default(context); }
void g_main_context_unref(GMainContext *context) { p_g_main_context_unref(context); }
void g_main_context_wakeup(GMainContext *context) { p_g_main_context_wakeup(context); }
GMainLoop *g_main_loop_new(GMainContext *context, gboolean is_running) { return p_g_main_loop_new(context, is_running); }
void g_main_loop_quit(GMainLoop *loop) { p_g_main_loop_quit(loop); }
void g_main_loop_run(GMainLoop *loop) { p_g_main_loop_run(loop); }
void g_main_loop_unref(GMainLoop *loop) { p_g_main_loop_unref(loop); }
GSList *g_slist_append(GSList *list, gpointer data) { return p_g_slist_append(list, data); }
void g_slist_free_full(GSList *list, GDestroyNotify free_func) { p_g_slist_free_full(list, free_func); }
void g_object_set(gpointer object, const gchar *first_property_name, ...) {
    va_list arguments;
    va_start(arguments, first_property_name);
    p_g_object_set_valist(object, first_property_name, arguments);
    va_end(arguments);
}
void g_object_unref(gpointer object) { p_g_object_unref(object); }
gulong g_signal_connect_data(gpointer instance, const gchar *detailed_signal, GCallback c_handler, gpointer data,
                             GClosureNotify destroy_data, GConnectFlags connect_flags) {
    return p_g_signal_connect_data(instance, detailed_signal, c_handler, data, destroy_data, connect_flags);
}

// libnice
void nice_address_init(NiceAddress *addr) { p_nice_address_init(addr); }
gboolean nice_address_set_from_string(NiceAddress *addr, const gchar *str) { return p_nice_address_set_from_string(addr, str); }
gboolean nice_agent_add_local_address(NiceAgent *agent, NiceAddress *addr) { return p_nice_agent_add_local_address(agent, addr); }
guint nice_agent_add_stream(NiceAgent *agent, guint n_components) { return p_nice_agent_add_stream(agent, n_components); }
gboolean nice_agent_attach_recv(NiceAgent *agent, guint stream_id, guint component_id, GMainContext *ctx,
                                NiceAgentRecvFunc func, gpointer data) {
    return p_nice_agent_attach_recv(agent, stream_id, component_id, ctx, func, data);
}
gboolean nice_agent_gather_candidates(NiceAgent *agent, guint stream_id) { return p_nice_agent_gather_candidates(agent, stream_id); }
gchar *nice_agent_generate_local_candidate_sdp(NiceAgent *agent, NiceCandidate *candidate) {
    return p_nice_agent_generate_local_candidate_sdp(agent, candidate);
}
GSList *nice_agent_get_local_candidates(NiceAgent *agent, guint stream_id, guint component_id) {
    return p_nice_agent_get_local_candidates(agent, stream_id, component_id);
}
NiceAgent *nice_agent_new(GMainContext *ctx, NiceCompatibility compat) { return p_nice_agent_new(ctx, compat); }
NiceCandidate *nice_agent_parse_remote_candidate_sdp(NiceAgent *agent, guint stream_id, const gchar *sdp) {
    return p_nice_agent_parse_remote_candidate_sdp(agent, stream_id, sdp);
}
void nice_agent_remove_stream(NiceAgent *agent, guint stream_id) { p_nice_agent_remove_stream(agent, stream_id); }
gint nice_agent_send(NiceAgent *agent, guint stream_id, guint component_id, guint len, const gchar *buf) {
    return p_nice_agent_send(agent, stream_id, component_id, len, buf);
}
gboolean nice_agent_set_local_credentials(NiceAgent *agent, guint stream_id, const gchar *ufrag, const gchar *pwd) {
    return p_nice_agent_set_local_credentials(agent, stream_id, ufrag, pwd);
}
int nice_agent_set_remote_candidates(NiceAgent *agent, guint stream_id, guint component_id, const GSList *candidates) {
    return p_nice_agent_set_remote_candidates(agent, stream_id, component_id, candidates);
}
gboolean nice_agent_set_remote_credentials(NiceAgent *agent, guint stream_id, const gchar *ufrag, const gchar *pwd) {
    return p_nice_agent_set_remote_credentials(agent, stream_id, ufrag, pwd);
}
void nice_candidate_free(NiceCandidate *candidate) { p_nice_candidate_free(candidate); }

// usrsctp
int usrsctp_bind(struct socket *so, struct sockaddr *name, socklen_t namelen) { return p_usrsctp_bind(so, name, namelen); }
void usrsctp_close(struct socket *so) { p_usrsctp_close(so); }
int usrsctp_connect(struct socket *so, struct sockaddr *name, socklen_t namelen) { return p_usrsctp_connect(so, name, namelen); }
void usrsctp_conninput(void *address, const void *buffer, size_t length, uint8_t ecn_bits) {
    p_usrsctp_conninput(address, buffer, length, ecn_bits);
}
void usrsctp_deregister_address(void *address) { p_usrsctp_deregister_address(address); }
void usrsctp_init(uint16_t port, int (*conn_output)(void *addr, void *buffer, size_t length, uint8_t tos, uint8_t set_df),
                  void (*debug_printf)(const char *format, ...)) {
    p_usrsctp_init(port, conn_output, debug_printf);
}
void usrsctp_register_address(void *address) { p_usrsctp_register_address(address); }
ssize_t usrsctp_sendv(struct socket *so, const void *data, size_t len, struct sockaddr *to, int addrcnt, void *info,
                      socklen_t infolen, unsigned int infotype, int flags) {
    return p_usrsctp_sendv(so, data, len, to, addrcnt, info, infolen, infotype, flags);
}
int usrsctp_set_non_blocking(struct socket *so, int onoff) { return p_usrsctp_set_non_blocking(so, onoff); }
int usrsctp_setsockopt(struct socket *so, int level, int option_name, const void *option_value, socklen_t option_len) {
    return p_usrsctp_setsockopt(so, level, option_name, option_value, option_len);
}
int usrsctp_shutdown(struct socket *so, int how) { return p_usrsctp_shutdown(so, how); }
struct socket *usrsctp_socket(int domain, int type, int protocol,
                              int (*receive_cb)(struct socket *sock, union sctp_sockstore addr, void *data, size_t datalen,
                                                struct sctp_rcvinfo, int flags, void *ulp_info),
                              int (*send_cb)(struct socket *sock, uint32_t sb_free, void *ulp_info),
                              uint32_t sb_threshold, void *ulp_info) {
    return p_usrsctp_socket(domain, type, protocol, receive_cb, send_cb, sb_threshold, ulp_info);
}
int usrsctp_sysctl_set_sctp_ecn_enable(uint32_t value) { return p_usrsctp_sysctl_set_sctp_ecn_enable(value); }

#pragma GCC visibility pop
