// Frames: their header codec, and what the transport does with each frame
// it receives (framing.h, connection.h).
#include "transport/tcp/framing.h"

#include <cstring>
#include <fmt/core.h>

#include "transport/tcp/connection.h"
#include "util/log.h"
#include "wire/codec.h"
#include "wire/messages.h"

namespace rcp::tcp {

void put_frame_header(std::vector<uint8_t>& out, uint8_t kind, uint32_t len, uint64_t cookie) {
  wire::Writer w(out);
  w.u8(kind);
  w.u8(0);
  w.u16(0);
  w.u32(len);
  w.u64(cookie);
}

FrameHeader get_frame_header(std::span<const uint8_t> in) {
  wire::Reader r(in.first(kFrameHeader));
  FrameHeader h;
  h.kind = r.u8();
  r.u8();
  r.u16();
  h.len = r.u32();
  h.cookie = r.u64();
  return h;
}

/// Consumes every complete frame buffered on a stream. Every length is
/// checked before anything is allocated or copied: a peer cannot make this
/// side buffer more than one control message.
Status TcpTransport::parse(uint32_t i, Stream& s, std::vector<TransportEvent>& events) {
  for (;;) {
    if (s.cur_read) {
      RCP_TRY(fill_read(s, events));
      if (s.cur_read) return {};  // needs more bytes
      continue;
    }
    if (s.rx_len - s.rx_pos < kFrameHeader) return {};
    const FrameHeader h = get_frame_header({s.rx.data() + s.rx_pos, kFrameHeader});
    const uint32_t len = h.len;
    const uint64_t cookie = h.cookie;
    const size_t avail = s.rx_len - s.rx_pos - kFrameHeader;
    const uint8_t* payload = s.rx.data() + s.rx_pos + kFrameHeader;
    switch (h.kind) {
      case kMsg: {
        if (i != 0) return make_error(EPROTO, fmt::format("{} sent a control frame on a data stream", peer_));
        // (The largest any message may be: decode() holds each type to its own.)
        if (len < wire::kHeaderSize || len > wire::kMaxLargeMessage)
          return make_error(EPROTO, fmt::format("{} sent a control frame of {} bytes", peer_, len));
        if (avail < len) return {};
        TransportEvent ev;
        ev.kind = TransportEvent::Kind::message;
        ev.message.assign(payload, payload + len);
        events.push_back(std::move(ev));
        s.rx_pos += kFrameHeader + len;
        break;
      }
      case kReadReq: {
        if (len != kReadReqPayload)
          return make_error(EPROTO, fmt::format("{} sent a read request of {} bytes", peer_, len));
        if (avail < len) return {};
        wire::Reader q({payload, kReadReqPayload});
        const uint64_t addr = q.u64();
        const uint32_t key = q.u32();
        const uint32_t rlen = q.u32();
        s.rx_pos += kFrameHeader + len;
        RCP_TRY(serve_read(s, cookie, addr, key, rlen));
        break;
      }
      case kReadResp: {
        auto it = reads_.find(cookie);
        if (it == reads_.end() || it->second.length != len || it->second.stream != i)
          return make_error(EPROTO, fmt::format("{} sent {} bytes for a read that was not asked for", peer_, len));
        s.rx_pos += kFrameHeader;
        s.cur_cookie = cookie;
        s.cur_read = &it->second;
        s.cur_done = 0;
        break;
      }
      case kReadErr: {
        // On the stream the request went out on, as its reply must: a refusal
        // arriving on another stream while the reply is being received into
        // the scatter list there would free the read under it (found by
        // fuzz_frames: a heap use-after-free).
        auto it = reads_.find(cookie);
        if (it == reads_.end() || it->second.stream != i)
          return make_error(EPROTO, fmt::format("{} refused a read that was not asked for", peer_));
        s.rx_pos += kFrameHeader;
        reads_.erase(it);
        events.push_back(TransportEvent::read_done(cookie, EACCES,
                                                   "peer refused the read (range outside its registered memory)"));
        break;
      }
      default: return make_error(EPROTO, fmt::format("{} sent an unknown frame kind {}", peer_, h.kind));
    }
  }
}

/// Copies what is buffered of the current read reply into its scatter
/// list; the rest is received there directly (submit_recv).
Status TcpTransport::fill_read(Stream& s, std::vector<TransportEvent>& events) {
  PendingRead& pr = *s.cur_read;
  while (s.cur_done < pr.length && s.rx_pos < s.rx_len) {
    size_t idx = 0;
    uint32_t base = 0;
    while (base + pr.sges[idx].length <= s.cur_done) base += pr.sges[idx++].length;
    const uint32_t in_sge = s.cur_done - base;
    size_t n = std::min<size_t>(s.rx_len - s.rx_pos, pr.sges[idx].length - in_sge);
    std::memcpy(reinterpret_cast<uint8_t*>(pr.sges[idx].addr) + in_sge, s.rx.data() + s.rx_pos, n);
    s.rx_pos += n;
    s.cur_done += static_cast<uint32_t>(n);
  }
  if (s.cur_done < pr.length) return {};
  events.push_back(TransportEvent::read_done(s.cur_cookie));
  reads_.erase(s.cur_cookie);
  s.cur_read = nullptr;
  return {};
}

/// Answers a READ_REQ, but only from memory this connection registered for
/// remote reading, exactly as an RNIC validates an rkey.
Status TcpTransport::serve_read(Stream& s, uint64_t cookie, uint64_t addr, uint32_t key, uint32_t len) {
  // An honest peer has at most neg_.reads_in_flight reads outstanding
  // (read_capacity()), and a reply counts here only until it is sent, so it
  // never owes more. One that asks on without reading the replies would
  // grow the queue by an item (~150 bytes of heap) per 40-byte request
  // until the daemon runs out of memory. Twice the agreed number: a send's
  // completion may be reaped after the request the peer made once it had
  // the reply.
  if (replies_owed_ >= 2 * neg_.reads_in_flight)
    return make_error(EPROTO, fmt::format("{} has {} read replies waiting and asks for more ({} reads in flight agreed)",
                                          peer_, replies_owed_, neg_.reads_in_flight));
  OutItem it;
  it.head.reserve(kFrameHeader);
  it.reply = true;
  ++replies_owed_;
  const Region* reg = (key >= 1 && key <= regions_.size()) ? &regions_[key - 1] : nullptr;
  const uint64_t base = reg ? reinterpret_cast<uint64_t>(reg->base) : 0;
  // (addr - base wraps to a huge offset for an address below the region:
  // one unsigned comparison refuses both sides.)
  if (!reg || !reg->remote_read || len == 0 || len > wire::kMaxChunk || addr - base > reg->len ||
      reg->len - (addr - base) < len) {
    log_error("refusing read of {} bytes at {:#x} (key {}) from {}: outside registered memory", len, addr, key, peer_);
    put_frame_header(it.head, kReadErr, 0, cookie);
  } else {
    put_frame_header(it.head, kReadResp, len, cookie);
    it.data = reinterpret_cast<const uint8_t*>(addr);
    it.data_len = len;
  }
  s.out.push_back(std::move(it));
  return {};
}

}  // namespace rcp::tcp
