// tor_api.h from the pinned tor core build (scripts/build-tor-core.sh installs it into the
// git-ignored .deps/tor prefix). Included by a path relative to this file so that every module that
// sees CTor, directly or through PosternCore, finds it without extra search paths.
#include "../../.deps/tor/include/tor_api.h"
