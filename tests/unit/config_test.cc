// Proves the effective configuration is computed from the user's settings
// and the negotiated limits alone, the same way for rcp and rcpd: the
// source's chunk never exceeds what the peer accepts, the sink's blocks hold
// a whole window of its own chunks, and connect options carry the settings.
#include <doctest/doctest.h>

#include <atomic>
#include <limits>

#include "session/config.h"
#include "session/plan.h"

using namespace rcp;

namespace {

Negotiated limits(uint32_t max_chunk) {
  Negotiated n;
  n.max_chunk = max_chunk;
  return n;
}

}  // namespace

TEST_CASE("the source's chunk is the user's, clamped to what the peer accepts") {
  Settings s;
  s.chunk_size = 4u << 20;
  CHECK(session_options(s, Role::source, limits(1u << 20)).chunk_size == 1u << 20);
  CHECK(session_options(s, Role::source, limits(8u << 20)).chunk_size == 4u << 20);
  CHECK(session_options(s, Role::source, limits(4u << 20)).chunk_size == 4u << 20);
  SUBCASE("a transport that states no limit leaves the user's size") {
    CHECK(session_options(s, Role::source, limits(0)).chunk_size == 4u << 20);
  }
}

TEST_CASE("the sink keeps the chunk it announced, whatever the peer's limit") {
  Settings s;
  s.chunk_size = 4u << 20;
  CHECK(session_options(s, Role::sink, limits(1u << 20)).chunk_size == 4u << 20);
  CHECK(session_options(s, Role::sink, limits(64u << 20)).chunk_size == 4u << 20);
}

TEST_CASE("slots are the window; the sink's blocks hold a window of whole chunks") {
  Settings s;
  s.window = 16;
  SUBCASE("defaults: 1 MiB chunks in 64 KiB blocks") {
    const SessionOptions o = session_options(s, Role::sink, limits(1u << 20));
    CHECK(o.slots == 16);
    CHECK(o.block_size == 64u << 10);
    CHECK(o.blocks == 16 * 16);
  }
  SUBCASE("chunks smaller than a block are one block each") {
    s.chunk_size = 4u << 10;
    const SessionOptions o = session_options(s, Role::sink, limits(1u << 20));
    CHECK(o.block_size == 4u << 10);
    CHECK(o.blocks == 16);
  }
  SUBCASE("a chunk that is not a multiple of the block rounds up") {
    s.chunk_size = 100u << 10;
    const SessionOptions o = session_options(s, Role::sink, limits(1u << 20));
    CHECK(o.block_size == 64u << 10);
    CHECK(o.blocks == 16 * 2);
  }
  SUBCASE("every edge: a window of the largest chunk always fits the blocks") {
    for (uint32_t kib : {4u, 60u, 64u, 65u, 1000u, 1024u, 65536u})
      for (uint32_t window : {1u, 3u, 16u, 4096u}) {
        s.chunk_size = kib << 10;
        s.window = window;
        const SessionOptions o = session_options(s, Role::sink, limits(1u << 20));
        CAPTURE(kib);
        CAPTURE(window);
        CHECK(o.block_size <= kMaxBlockSize);
        CHECK(o.block_size <= o.chunk_size);
        CHECK(o.blocks >= 1);
        CHECK(uint64_t{o.blocks} * o.block_size >= uint64_t{window} * o.chunk_size);
        CHECK(o.blocks == window * blocks_for(o.chunk_size, o.block_size));
      }
  }
}

TEST_CASE("the rest of the settings pass through unchanged") {
  std::atomic<bool> cancel{false};
  Settings s;
  s.checksum = Checksum::sha256;
  s.fsync = true;
  s.hash_threads = 3;
  s.cancel = &cancel;
  for (Role r : {Role::source, Role::sink}) {
    const SessionOptions o = session_options(s, r, limits(1u << 20));
    CHECK(o.checksum == Checksum::sha256);
    CHECK(o.fsync);
    CHECK(o.hash_threads == 3);
    CHECK(o.cancel == &cancel);
    CHECK(o.idle_timeout_ms == SessionOptions{}.idle_timeout_ms);
  }
}

TEST_CASE("connect options announce the chunk size and choose the streams") {
  Settings s;
  s.chunk_size = 256u << 10;
  ConnectOptions base;
  base.kind = TransportKind::tcp;
  base.tcp_port = 9000;
  base.zerocopy = false;
  SUBCASE("streams unset: each transport's default") {
    const ConnectOptions c = connect_options(s, base);
    CHECK(c.max_chunk == 256u << 10);
    CHECK(c.tcp_streams == 0);  // TCP decides once connected: 1 to a daemon on this host, else 2
    CHECK(c.rdma_qps == kDefaultRdmaQps);
    CHECK(c.kind == TransportKind::tcp);
    CHECK(c.tcp_port == 9000);
    CHECK_FALSE(c.zerocopy);
  }
  SUBCASE("streams set: both transports use it") {
    s.streams = 5;
    const ConnectOptions c = connect_options(s, base);
    CHECK(c.tcp_streams == 5);
    CHECK(c.rdma_qps == 5);
  }
}

TEST_CASE("--bwlimit caps the chunk at one second of the rate, in whole 4 KiB, at least 4 KiB") {
  Settings s;
  s.chunk_size = 1u << 20;
  s.bwlimit = 300 * 1024;  // 300 KiB/s
  CHECK(session_options(s, Role::sink, limits(0)).chunk_size == 300u * 1024);
  CHECK(session_options(s, Role::sink, limits(0)).bwlimit == 300u * 1024);
  CHECK(connect_options(s, {}).max_chunk == 300u * 1024);  // a pull's source sends no larger
  s.bwlimit = 5000;  // not a multiple of 4 KiB: rounded down
  CHECK(session_options(s, Role::source, limits(0)).chunk_size == 4096u);
  s.bwlimit = 1024;  // below one chunk: the smallest chunk
  CHECK(session_options(s, Role::source, limits(0)).chunk_size == 4096u);
  s.bwlimit = 1ull << 40;  // faster than a chunk a second: the user's chunk
  CHECK(session_options(s, Role::source, limits(0)).chunk_size == 1u << 20);
  s.bwlimit = 0;
  CHECK(session_options(s, Role::source, limits(0)).chunk_size == 1u << 20);
}

TEST_CASE("--timeout: seconds of no progress, 30 by default, 0 never") {
  Settings s;
  CHECK(session_options(s, Role::sink, limits(0)).idle_timeout_ms == 30000);
  s.io_timeout_s = 2;
  CHECK(session_options(s, Role::source, limits(0)).idle_timeout_ms == 2000);
  s.io_timeout_s = 0;
  CHECK(session_options(s, Role::sink, limits(0)).idle_timeout_ms == std::numeric_limits<int>::max());
  s.io_timeout_s = 4'000'000;  // past a day: clamped, never an int overflow
  CHECK(session_options(s, Role::sink, limits(0)).idle_timeout_ms == 86400 * 1000);
}

TEST_CASE("digest threads: the user's number stands; by default one, none beside a local peer on fewer than 4 CPUs") {
  CHECK(hash_threads_for(3, 2, true) == 3);
  CHECK(hash_threads_for(0, 64, false) == 0);
  CHECK(hash_threads_for(kHashThreadsAuto, 2, false) == 1);   // a remote peer: its CPUs are its own
  CHECK(hash_threads_for(kHashThreadsAuto, 2, true) == 0);    // both loops on 2 CPUs already
  CHECK(hash_threads_for(kHashThreadsAuto, 3, true) == 0);
  CHECK(hash_threads_for(kHashThreadsAuto, 4, true) == 1);
  CHECK(hash_threads_for(kHashThreadsAuto, 0, true) == 1);    // CPUs not known: as on a large host
  Settings s;  // the default is automatic, decided per session from the transport
  s.cpus = 2;
  Negotiated local = limits(1u << 20);
  local.local_peer = true;
  CHECK(session_options(s, Role::sink, local).hash_threads == 0);
  CHECK(session_options(s, Role::sink, limits(1u << 20)).hash_threads == 1);
}
