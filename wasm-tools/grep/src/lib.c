/* The code glob and grep share lives in wasm-tools/lib/ (see walk.h);
 * including it here compiles it into this tool with no extra build step. */
#include "../../lib/walk.c"
#include "../../lib/wildmatch.c"
