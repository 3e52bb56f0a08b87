// libnice (Debian libnice-dev) for the snowflake transport's ICE. GObject's variadic property
// setter and signal macros cannot be called from Swift; the static inline helpers below wrap them
// and route the two signals and the receive callback to plain C function pointers. Nothing is
// linked: the functions resolve to CSnowflakeLibraries' forwarders, which dlopen the libraries on
// the first snowflake connection (postern_snowflake_libraries_load).
#ifndef POSTERN_CNICE_H
#define POSTERN_CNICE_H
#include <agent.h>

typedef void (*postern_nice_gathered_fn)(void *user);
typedef void (*postern_nice_state_fn)(void *user, guint state);
typedef void (*postern_nice_receive_fn)(void *user, const gchar *buffer, guint length);

typedef struct {
    postern_nice_gathered_fn gathered;
    postern_nice_state_fn state;
    postern_nice_receive_fn receive;
    void *user;
} postern_nice_callbacks;

static void postern_nice__gathering_done(NiceAgent *agent, guint stream, gpointer data) {
    (void)agent; (void)stream;
    postern_nice_callbacks *callbacks = data;
    callbacks->gathered(callbacks->user);
}

static void postern_nice__state_changed(NiceAgent *agent, guint stream, guint component, guint state, gpointer data) {
    (void)agent; (void)stream; (void)component;
    postern_nice_callbacks *callbacks = data;
    callbacks->state(callbacks->user, state);
}

static void postern_nice__received(NiceAgent *agent, guint stream, guint component, guint length, gchar *buffer, gpointer data) {
    (void)agent; (void)stream; (void)component;
    postern_nice_callbacks *callbacks = data;
    callbacks->receive(callbacks->user, buffer, length);
}

/// A full RFC 5245 agent; no UPnP; UDP only (no ICE-TCP: the reference client, pion, offers no TCP
/// candidate, and libnice's active ones sit on port 9 in the offer); optional STUN server (IP literal).
static inline NiceAgent *postern_nice_agent_new(GMainContext *context, const char *stun_ip, guint stun_port, gboolean controlling) {
    NiceAgent *agent = nice_agent_new(context, NICE_COMPATIBILITY_RFC5245);
    if (agent == NULL) return NULL;
    g_object_set(agent, "controlling-mode", controlling, "upnp", FALSE, "ice-tcp", FALSE, NULL);
    if (stun_ip != NULL) g_object_set(agent, "stun-server", stun_ip, "stun-server-port", stun_port, NULL);
    return agent;
}

/// Connects the signals and the receive callback of component 1 of `stream`.
static inline gboolean postern_nice_attach(NiceAgent *agent, guint stream, GMainContext *context, postern_nice_callbacks *callbacks) {
    g_signal_connect(agent, "candidate-gathering-done", G_CALLBACK(postern_nice__gathering_done), callbacks);
    g_signal_connect(agent, "component-state-changed", G_CALLBACK(postern_nice__state_changed), callbacks);
    return nice_agent_attach_recv(agent, stream, 1, context, postern_nice__received, callbacks);
}

/// Adds a local address given as an IP literal; FALSE if it does not parse.
static inline gboolean postern_nice_add_local_address(NiceAgent *agent, const char *ip) {
    NiceAddress address;
    nice_address_init(&address);
    if (!nice_address_set_from_string(&address, ip)) return FALSE;
    return nice_agent_add_local_address(agent, &address);
}

/// Forgets the STUN server once gathering is done. While a component is not yet connected, libnice
/// 0.1.21 sends the STUN server a keepalive Binding request built by its ICE STUN agent (RFC 5389
/// with FINGERPRINT; conncheck.c, "Keeping Candidates Alive"), a request no browser or pion sends;
/// it sends none when no STUN server is set. The server-reflexive candidate is already gathered.
static inline void postern_nice_forget_stun_server(NiceAgent *agent) {
    g_object_set(agent, "stun-server", NULL, NULL);
}

static inline void postern_nice_agent_unref(NiceAgent *agent) { g_object_unref(agent); }
#endif
