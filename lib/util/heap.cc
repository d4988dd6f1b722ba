#include "util/heap.h"

// Any C library header defines __GLIBC__ (via <features.h>); without one
// included first the check below is always false and the function a bare
// `ret`, as it was from 074579b to this fix.
#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace rcp {

void release_free_heap() {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

}  // namespace rcp
