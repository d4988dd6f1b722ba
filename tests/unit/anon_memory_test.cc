// Proves the pool's memory is what Pool expects: the size asked, zeroed, writable, resident
// before use, 2 MiB-aligned when huge pages were asked for, and released by its owner.
#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "util/anon_memory.h"

using namespace rcp;

TEST_CASE("anon memory: zeroed, writable, resident, huge-page aligned when big") {
  for (size_t len : {size_t{4096}, size_t{1} << 20, size_t{16} << 20, (size_t{3} << 20) + 4096}) {
    CAPTURE(len);
    auto m = AnonMemory::map(len);
    REQUIRE(m.ok());
    REQUIRE(m->data() != nullptr);
    CHECK(m->size() == len);
    const bool big = len >= (size_t{2} << 20);
    if (!big) CHECK_FALSE(m->huge());
    if (m->huge()) CHECK(reinterpret_cast<uintptr_t>(m->data()) % (size_t{2} << 20) == 0);
    // Resident before first use: the pool must not fault on the I/O path.
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> vec((len + page - 1) / page);
    auto* start = reinterpret_cast<uint8_t*>(reinterpret_cast<uintptr_t>(m->data()) & ~(page - 1));
    REQUIRE(::mincore(start, len, vec.data()) == 0);
    size_t resident = 0;
    for (unsigned char v : vec) resident += v & 1;
    CHECK(resident == vec.size());
    bool zero = true;
    for (size_t i = 0; i < len; i += 509) zero = zero && m->data()[i] == 0;
    CHECK(zero);
    m->data()[0] = 1;
    m->data()[len - 1] = 2;
    AnonMemory moved = std::move(m.value());
    CHECK(moved.data()[len - 1] == 2);
    CHECK(m->data() == nullptr);
  }
  CHECK_FALSE(AnonMemory::map(0).ok());
}

TEST_CASE("anon memory: nothing to map, or more than there is, is an error saying which") {
  auto none = AnonMemory::map(0);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == EINVAL);
  CHECK(none.error().context == "map 0 bytes");
  const size_t huge = size_t{1} << 60;  // beyond any address space mmap hands out
  auto big = AnonMemory::map(huge);
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().code == ENOMEM);
  CHECK(big.error().context == "allocate " + std::to_string(huge) + " bytes");
}
