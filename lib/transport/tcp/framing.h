/// The TCP transport's frames: every byte on a stream after the hello is a
/// frame — a 16-byte header (kind, length, cookie) and its payload. Four
/// kinds carry the whole RDMA contract: a control message (stream 0 only), a
/// read request naming a remote range by key, address and length (the
/// RDMA READ work request), its reply carrying those bytes, and a refusal
/// when the range is outside what the peer registered (a bad rkey).
/// The header is encoded and checked here; what the transport does with
/// each frame it receives is TcpTransport::parse() in framing.cc.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace rcp::tcp {

/// kind u8, pad u8, pad u16, length u32, cookie u64 (big-endian).
constexpr size_t kFrameHeader = 16;
/// A read request's payload: address u64, key u32, length u32.
constexpr uint32_t kReadReqPayload = 16;

enum FrameKind : uint8_t { kMsg = 1, kReadReq = 2, kReadResp = 3, kReadErr = 4 };

struct FrameHeader {
  uint8_t kind = 0;
  uint32_t len = 0;      ///< payload bytes that follow
  uint64_t cookie = 0;   ///< read request/reply/refusal: the requester's cookie
};

/// Appends a frame header to out.
void put_frame_header(std::vector<uint8_t>& out, uint8_t kind, uint32_t len, uint64_t cookie);
/// Decodes the header at the start of in (in.size() >= kFrameHeader).
FrameHeader get_frame_header(std::span<const uint8_t> in);

}  // namespace rcp::tcp
