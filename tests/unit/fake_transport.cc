#include "fake_transport.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fmt/core.h>

#include "transport/backlog.h"

namespace rcp::test {

/// One endpoint; all state lives in the link, under its mutex (the two
/// endpoints run on different threads).
class FakeEnd : public Transport {
 public:
  FakeEnd(FakeLink& link, int side) : link_(link), side_(side) {
    neg_.reads_in_flight = link.opt_.reads_in_flight;
    neg_.max_sge = link.opt_.max_sge;
    neg_.max_chunk = link.opt_.max_chunk;
    neg_.checksums = 7;
  }

  std::string name() const override { return "fake"; }
  std::string peer() const override { return side_ == 0 ? "fake-b" : "fake-a"; }
  const Negotiated& negotiated() const override { return neg_; }

  Result<uint32_t> register_memory(void* base, size_t len, bool remote_read) override {
    std::lock_guard lk(link_.mu_);
    auto& regs = link_.st_[side_].regions;
    // Keys differ per side, so a key of the wrong side never matches.
    const uint32_t key = 0x100u * static_cast<uint32_t>(side_ + 1) + static_cast<uint32_t>(regs.size()) + 1;
    regs.push_back({static_cast<uint8_t*>(base), len, remote_read, key});
    return key;
  }

  void deregister_memory(uint32_t key) override {
    std::lock_guard lk(link_.mu_);
    for (auto& r : link_.st_[side_].regions)
      if (r.key == key) r = {};
  }

  size_t max_message() const override { return link_.opt_.max_message; }

  Status send(std::span<const uint8_t> message) override {
    if (message.size() > link_.opt_.max_message)  // (as an RDMA send larger than the peer's receive buffer)
      return make_error(EMSGSIZE, fmt::format("fake: a message of {} bytes, more than {}", message.size(), link_.opt_.max_message));
    auto m = wire::decode(message);
    std::lock_guard lk(link_.mu_);
    if (const size_t held = link_.st_[side_].unsent; held + unsent_cost(message.size()) > kMaxUnsent)
      return unsent_error(peer(), held, 0);
    if (!m.ok()) {
      link_.seen_.violations.push_back("undecodable message: " + m.error().context);
      return make_error(EPROTO, "fake: undecodable message");
    }
    if (std::holds_alternative<wire::ChunkReady>(m.value())) {
      uint32_t& n = link_.st_[side_].chunks_since_poll;
      link_.seen_.most_chunks_per_poll[side_] = std::max(link_.seen_.most_chunks_per_poll[side_], ++n);
    }
    auto& hook = link_.st_[side_].hook;
    if (!hook) {
      link_.deliver_locked(side_, m.value());
      return {};
    }
    std::vector<wire::Message> out;
    hook(m.value(), out);
    for (auto& x : out) link_.deliver_locked(side_, x);
    return {};
  }

  size_t unsent_bytes() const override {
    std::lock_guard lk(link_.mu_);
    return link_.st_[side_].unsent;
  }

  Status read(uint64_t cookie, uint32_t rkey, std::span<const ReadWr> wrs) override {
    std::lock_guard lk(link_.mu_);
    auto& me = link_.st_[side_];
    auto& peer = link_.st_[1 - side_];
    // Capacity counts work requests, as on a queue pair.
    const uint32_t nwrs = static_cast<uint32_t>(wrs.size());
    if (me.reads_out + nwrs > neg_.reads_in_flight)
      link_.seen_.violations.push_back(fmt::format("read of {} work requests with {} already out (capacity {})", nwrs,
                                                   me.reads_out, neg_.reads_in_flight));
    me.reads_out += nwrs;
    me.read_wrs[cookie] = nwrs;
    const auto* remote = [&]() -> const FakeLink::Region* {
      for (auto& r : peer.regions)
        if (r.key == rkey && r.base && r.remote_read) return &r;
      return nullptr;
    }();
    auto inside = [](const FakeLink::Region& r, uint64_t addr, uint64_t len) {
      const uint64_t base = reinterpret_cast<uint64_t>(r.base);
      return addr >= base && addr - base <= r.len && r.len - (addr - base) >= len;
    };
    auto local_ok = [&](const Sge& s) {
      for (auto& r : me.regions)
        if (r.base && inside(r, s.addr, s.length)) return true;
      return false;
    };
    std::string bad;
    if (!remote) bad = fmt::format("key {:#x} names no memory the peer registered for remote reading", rkey);
    for (const auto& wr : wrs) {
      if (!bad.empty()) break;
      uint64_t sum = 0;
      for (auto& s : wr.sges) sum += s.length;
      if (wr.sges.empty() || wr.sges.size() > neg_.max_sge) {
        link_.seen_.violations.push_back(fmt::format("read work request with {} SGEs", wr.sges.size()));
        bad = "too many SGEs";
      } else if (sum != wr.length) {
        bad = fmt::format("SGEs hold {} bytes for a read of {}", sum, wr.length);
      } else if (!inside(*remote, wr.remote_addr, wr.length)) {
        bad = fmt::format("remote range [{:#x}, +{}) outside the registration", wr.remote_addr, wr.length);
      } else {
        for (auto& s : wr.sges)
          if (!local_ok(s)) bad = fmt::format("local SGE [{:#x}, +{}) outside our registrations", s.addr, s.length);
      }
    }
    if (!bad.empty()) {
      ++link_.seen_.reads_refused;
      link_.push_locked(side_, TransportEvent::read_done(cookie, EACCES, "fake: " + bad));
      return {};
    }
    const uint64_t seq = link_.seen_.reads++;
    uint8_t* first = nullptr;
    for (const auto& wr : wrs) {
      const uint8_t* src = reinterpret_cast<const uint8_t*>(wr.remote_addr);
      for (auto& s : wr.sges) {
        std::memcpy(reinterpret_cast<void*>(s.addr), src, s.length);
        if (!first && s.length > 0) first = reinterpret_cast<uint8_t*>(s.addr);
        src += s.length;
      }
    }
    uint32_t total = 0;
    for (const auto& wr : wrs) total += wr.length;
    if (link_.read_hook_ && first && link_.read_hook_(seq, wrs.front().remote_addr, total)) first[0] ^= 0x5a;
    link_.push_locked(side_, TransportEvent::read_done(cookie));
    return {};
  }

  uint32_t read_capacity() const override {
    std::lock_guard lk(link_.mu_);
    const uint32_t out = link_.st_[side_].reads_out;
    return out >= neg_.reads_in_flight ? 0 : neg_.reads_in_flight - out;
  }

  Status poll(std::vector<TransportEvent>& out) override {
    std::function<void()> hook;
    {
      std::lock_guard lk(link_.mu_);
      hook = link_.st_[side_].poll_hook;
    }
    if (hook) hook();
    std::lock_guard lk(link_.mu_);
    auto& me = link_.st_[side_];
    me.chunks_since_poll = 0;
    uint64_t v;
    while (::read(me.efd.get(), &v, sizeof v) == sizeof v) {
    }
    for (auto& e : me.inbox) {
      if (e.kind == TransportEvent::Kind::read_done) {
        me.reads_out -= me.read_wrs[e.cookie];
        me.read_wrs.erase(e.cookie);
      }
      out.push_back(std::move(e));
    }
    me.inbox.clear();
    return {};
  }

  int wait_fd() const override { return link_.st_[side_].efd.get(); }
  Status arm() override { return {}; }
  bool send_pending() const override { return false; }

 private:
  FakeLink& link_;
  int side_;
  Negotiated neg_;
};

FakeLink::FakeLink(Options o) : opt_(o) {
  for (int i = 0; i < 2; ++i) {
    st_[i].efd.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    ends_[i] = std::make_unique<FakeEnd>(*this, i);
  }
}

FakeLink::~FakeLink() = default;

Transport& FakeLink::end(Side s) { return *ends_[static_cast<int>(s)]; }

void FakeLink::set_hook(Side from, Hook h) {
  std::lock_guard lk(mu_);
  st_[static_cast<int>(from)].hook = std::move(h);
}

void FakeLink::set_unsent(Side s, size_t bytes) {
  std::lock_guard lk(mu_);
  st_[static_cast<int>(s)].unsent = bytes;
  const uint64_t one = 1;  // wake its loop: it may send again
  (void)!::write(st_[static_cast<int>(s)].efd.get(), &one, sizeof one);
}

void FakeLink::set_poll_hook(Side s, std::function<void()> h) {
  std::lock_guard lk(mu_);
  st_[static_cast<int>(s)].poll_hook = std::move(h);
}

void FakeLink::set_read_hook(ReadHook h) {
  std::lock_guard lk(mu_);
  read_hook_ = std::move(h);
}

void FakeLink::inject(Side from, const wire::Message& m) {
  std::lock_guard lk(mu_);
  deliver_locked(static_cast<int>(from), m);
}

void FakeLink::inject_bytes(Side from, std::vector<uint8_t> bytes) {
  std::lock_guard lk(mu_);
  TransportEvent e;
  e.kind = TransportEvent::Kind::message;
  e.message = std::move(bytes);
  push_locked(1 - static_cast<int>(from), std::move(e));
}

void FakeLink::close(Side from, std::string why) {
  std::lock_guard lk(mu_);
  push_locked(1 - static_cast<int>(from), TransportEvent::closed(ECONNRESET, std::move(why)));
}

FakeLink::Seen FakeLink::seen() const {
  std::lock_guard lk(mu_);
  return seen_;
}

void FakeLink::deliver_locked(int from, const wire::Message& m) {
  // Credits: a CHUNK_READY lends a slot, a CHUNK_DONE from the other side returns it.
  if (auto* c = std::get_if<wire::ChunkReady>(&m)) {
    if (std::find(chunks_out_.begin(), chunks_out_.end(), c->slot) != chunks_out_.end())
      seen_.violations.push_back(fmt::format("CHUNK_READY for slot {}, which is still out", c->slot));
    chunks_out_.push_back(c->slot);
    seen_.max_chunks_out = std::max<uint32_t>(seen_.max_chunks_out, static_cast<uint32_t>(chunks_out_.size()));
    if (opt_.credit_limit && chunks_out_.size() > opt_.credit_limit)
      seen_.violations.push_back(
          fmt::format("{} chunks out, more than the {} slots lent", chunks_out_.size(), opt_.credit_limit));
  } else if (auto* d = std::get_if<wire::ChunkDone>(&m)) {
    for (uint32_t s : d->slots)
      if (auto it = std::find(chunks_out_.begin(), chunks_out_.end(), s); it != chunks_out_.end()) chunks_out_.erase(it);
  }
  std::vector<uint8_t> buf;
  if (!wire::encode(m, buf).ok()) {
    seen_.violations.push_back("unencodable message");
    return;
  }
  seen_.sent[from].push_back(wire::type_of(m));
  TransportEvent e;
  e.kind = TransportEvent::Kind::message;
  e.message = std::move(buf);
  push_locked(1 - from, std::move(e));
}

void FakeLink::push_locked(int to, TransportEvent e) {
  st_[to].inbox.push_back(std::move(e));
  const uint64_t one = 1;
  (void)!::write(st_[to].efd.get(), &one, sizeof one);
}

}  // namespace rcp::test
