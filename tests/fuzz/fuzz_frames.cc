// libFuzzer: the TCP transport's frame parser (TcpTransport::parse and serve_read, framing.cc)
// fed what a hostile peer sends on two streams, in pieces as a socket might deliver them, with
// three of this side's reads outstanding. Byte 0 picks the first stream (bit 0) and whether
// pieces alternate between the streams (bit 1), byte 1 the piece size; the rest is the bytes. Beyond the sanitizers, it checks what the parser promises:
// a reply lands only in its read's scatter list (ASan: the sink is exactly their size), each
// read completes at most once and only if it was asked, control messages come only on
// stream 0 and within kMaxLargeMessage (SMALL_FILE's bound), a served read names only memory registered for remote
// reading, and the receive buffer never fills (so no frame can stall a stream).
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <span>
#include <vector>

#include "transport/tcp/connection.h"
#include "util/log.h"
#include "wire/messages.h"

namespace rcp::tcp {

struct FrameFeeder {
  /// One receive's worth of bytes on a stream, then parse() as the transport runs it.
  static Status feed(TcpTransport& t, uint32_t stream, std::span<const uint8_t> in, std::vector<TransportEvent>& ev) {
    Stream& s = *t.streams_[stream];
    if (s.rx_pos > 0) {  // as submit_recv() compacts before a receive
      std::memmove(s.rx.data(), s.rx.data() + s.rx_pos, s.rx_len - s.rx_pos);
      s.rx_len -= s.rx_pos;
      s.rx_pos = 0;
    }
    if (in.size() > s.rx.size() - s.rx_len) std::abort();  // the buffer filled with bytes parse() will never take
    std::memcpy(s.rx.data() + s.rx_len, in.data(), in.size());
    s.rx_len += in.size();
    return t.parse(stream, s, ev);
  }
  static const std::deque<OutItem>& out(TcpTransport& t, uint32_t stream) { return t.streams_[stream]->out; }
};

}  // namespace rcp::tcp

namespace {
constexpr uint64_t kPoolAt = 0x300000000000;  // in ASan's high application range, away from its heap (0x6000...)
constexpr size_t kPoolLen = 64 * 1024;        // (make_corpus.cc names both in its seeds)
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rcp;
  using namespace rcp::tcp;
  static const bool quiet = (set_log_level(LogLevel::quiet), true);
  (void)quiet;
  if (size < 2) return 0;
  const uint32_t stream = data[0] & 1;
  const size_t piece = 1 + static_cast<size_t>(data[1]) * 17;
  // The registered pool sits at a fixed address (kPoolAt) so that seeds can name it and the
  // fuzzer reach the served path, not only the refusals.
  static uint8_t* const lo = [] {
    void* p = ::mmap(reinterpret_cast<void*>(kPoolAt), kPoolLen, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != reinterpret_cast<void*>(kPoolAt)) std::abort();
    std::memset(p, 0xab, kPoolLen);
    return static_cast<uint8_t*>(p);
  }();

  Negotiated n;
  n.reads_in_flight = 16;
  n.max_chunk = wire::kMaxChunk;
  TcpTransport t("fuzz peer", n, false);
  t.add_stream(Fd());
  t.add_stream(Fd());
  if (auto key = t.register_memory(lo, kPoolLen, true); !key.ok() || key.value() != 1) std::abort();
  // Three reads outstanding: cookie 1 (100 bytes) and 3 (1 byte) on stream 0, cookie 2
  // (4,096 bytes over two SGEs) on stream 1; the sink is exactly their size.
  std::vector<uint8_t> sink(100 + 4096 + 1);
  const uint64_t at = reinterpret_cast<uint64_t>(sink.data());
  ReadWr r1{0x1000, 100, {{at, 100}}};
  ReadWr r2{0x2000, 4096, {{at + 100, 1000}, {at + 1100, 3096}}};
  ReadWr r3{0x3000, 1, {{at + 4196, 1}}};
  if (!t.read(1, 7, {&r1, 1}).ok() || !t.read(2, 7, {&r2, 1}).ok() || !t.read(3, 7, {&r3, 1}).ok()) std::abort();

  // Pieces go to the first stream, or (byte 0, bit 1) alternate between the two, so that
  // frames on one stream can interleave with a reply arriving on the other.
  const bool alternate = data[0] & 2;
  std::vector<TransportEvent> ev;
  std::set<uint64_t> done;
  const size_t before[2] = {FrameFeeder::out(t, 0).size(), FrameFeeder::out(t, 1).size()};
  uint32_t on = stream;
  for (size_t off = 2; off < size; off += piece, on = alternate ? on ^ 1 : on) {
    const size_t had = ev.size();
    const Status st = FrameFeeder::feed(t, on, {data + off, std::min(piece, size - off)}, ev);
    for (size_t k = had; k < ev.size(); ++k) {
      const TransportEvent& e = ev[k];
      if (e.kind == TransportEvent::Kind::read_done) {
        if (e.cookie < 1 || e.cookie > 3 || !done.insert(e.cookie).second) std::abort();
      } else if (e.kind == TransportEvent::Kind::message) {
        if (on != 0 || e.message.size() < wire::kHeaderSize || e.message.size() > wire::kMaxLargeMessage) std::abort();
      }
    }
    if (!st.ok()) break;  // the transport closes the connection here
  }
  for (uint32_t k = 0; k < 2; ++k) {
    const auto& out = FrameFeeder::out(t, k);
    for (size_t i = before[k]; i < out.size(); ++i) {
      const OutItem& it = out[i];
      if (it.data == nullptr) continue;  // a refusal
      if (it.data < lo || it.data_len == 0 || it.data_len > kPoolLen ||
          static_cast<size_t>(it.data - lo) > kPoolLen - it.data_len)
        std::abort();
    }
  }
  return 0;
}
