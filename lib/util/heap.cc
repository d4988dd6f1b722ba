#include "util/heap.h"

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
