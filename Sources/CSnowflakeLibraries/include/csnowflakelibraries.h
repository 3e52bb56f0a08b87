// snowflake's C libraries (libnice with GLib/GObject for ICE, usrsctp for SCTP) are opened with
// dlopen the first time a snowflake connection is made, not linked into the executable: a run
// that never uses snowflake maps none of them (libnice alone pulls in GIO, libsoup, GnuTLS, libxml2,
// SQLite and ICU, about 4 MB of resident pages in `postern run`). loader.c defines, with hidden
// visibility, every function of those libraries that CNice, CUsrsctp and the snowflake module
// call, each forwarding to the symbol dlsym found.
#ifndef POSTERN_CSNOWFLAKELIBRARIES_H
#define POSTERN_CSNOWFLAKELIBRARIES_H

/// Opens the libraries once per process (later calls return the first result). NULL on success,
/// else a message naming the library that failed and dlerror's reason. Call before any other
/// function of those libraries.
const char *postern_snowflake_libraries_load(void);

#endif
