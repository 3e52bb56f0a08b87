// tor_api.h comes from the pinned tor core build (scripts/build-tor-core.sh), found through the
// include path that Package.swift adds for the PosternCore target.
#include <tor_api.h>
