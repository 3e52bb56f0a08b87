// NSS 3.87 and NSPR 4.35 (Debian libnss3-dev, libnspr4-dev): Firefox's own TLS library, for the
// transports' browser-shaped TLS (docs/TLS-LIBRARY-CHOICE.md). Found through pkg-config's nss.pc.
// NSS's "experimental" calls are macros that look the function up at run time; CNSSShim wraps
// those, and holds the memory I/O layer, so Swift only ever calls plain functions.
#ifndef POSTERN_CNSS_H
#define POSTERN_CNSS_H
#include <cert.h>
#include <nss.h>
#include <prerror.h>
#include <prio.h>
#include <secerr.h>
#include <ssl.h>
#include <sslerr.h>
#include <sslproto.h>
#include <sslt.h>
#endif
