// rdmapeer: a hostile rdma_cm peer for the integration suite. It asks rcpd to let a queue
// pair join a session it has no right to — with a random token, a token of 0, a join hello
// cut short, or random private data — and reports whether the daemon refused. It creates no
// QP: a join that got through would show up as a connect response instead of a reject.
//   rdmapeer HOST PORT join-random|join-zero|join-short|garbage SEED
// Exit status: 0 refused (what the suite expects), 1 accepted, 2 could not even try.
// never-complete SECONDS asks for a session with a valid hello, takes the daemon's accept and
// then never completes the connection (no RTU), for SECONDS: the daemon's listener must have
// answered without waiting for it (exit 0 when the accept came), and keep serving others.
//   rdmapeer HOST PORT never-complete SECONDS
// unread-answers opens a put over a real connection (the library's RDMA transport) and
// announces up to N files whose names the daemon refuses (each answered with a FILE_RESULT that
// quotes the 3,000-byte name), reading slowly but within its credits: a receive that carried an
// answer is never posted again (RCP_TEST_FAULT=rdma-hoard-receives, set here), so the daemon
// keeps one credit, enough to send grants and never an answer, while the files keep coming. The
// daemon must hang up once what it holds for this peer reaches its bound (transport/backlog.h),
// not hold every answer. Exit 0 when it hung up, printing after how many files.
//   rdmapeer HOST PORT unread-answers MODULE/DIR N
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "session/channel.h"
#include "session/ledger.h"
#include "transport/connect.h"
#include "wire/messages.h"

namespace {

rdma_cm_event_type wait_event(rdma_event_channel* ch, int timeout_ms, std::vector<uint8_t>* pdata = nullptr) {
  pollfd pfd{ch->fd, POLLIN, 0};
  if (::poll(&pfd, 1, timeout_ms) <= 0) return RDMA_CM_EVENT_CONNECT_ERROR;
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(ch, &ev) != 0) return RDMA_CM_EVENT_CONNECT_ERROR;
  rdma_cm_event_type t = ev->event;
  if (pdata && ev->param.conn.private_data) {
    auto* p = static_cast<const uint8_t*>(ev->param.conn.private_data);
    pdata->assign(p, p + ev->param.conn.private_data_len);
  }
  rdma_ack_cm_event(ev);
  return t;
}

int unread_answers(const char* host, const char* port, const std::string& path, uint32_t n) {
  // Before the first use of the fault switches (the transport reads them once).
  ::setenv("RCP_TEST_FAULT", "rdma-hoard-receives", 1);
  rcp::ConnectOptions co;
  co.kind = rcp::TransportKind::rdma;
  co.rdma_port = static_cast<uint16_t>(std::atoi(port));
  co.rdma_qps = 1;
  std::string note;
  auto t = rcp::connect_transport(host, co, note);
  if (!t.ok()) {
    std::printf("rdmapeer unread-answers: cannot connect: %s\n", t.error().message().c_str());
    return 2;
  }
  rcp::Transport& tr = **t;
  rcp::Channel ch(tr);
  rcp::wire::Open open;
  open.op = rcp::wire::Op::put;
  open.path = path;
  open.flags = rcp::wire::kOpenMulti;
  if (!ch.send(open).ok()) return 2;
  auto ok = ch.receive(10000);
  if (!ok.ok() || !std::holds_alternative<rcp::wire::OpenOk>(ok.value())) {
    std::printf("rdmapeer unread-answers: the put was not opened: %s\n",
                ok.ok() ? "another answer" : ok.error().message().c_str());
    return 1;
  }
  const rcp::wire::Digest empty = rcp::FileLedger(rcp::Checksum::xxh128, 0).file_digest();
  const std::string stem = "../" + std::string(3000, 'u');
  using Clock = std::chrono::steady_clock;
  Clock::time_point give_up = Clock::now() + std::chrono::seconds(120);
  bool all_sent = false;
  uint32_t id = 0, answers = 0;
  std::vector<rcp::TransportEvent> ev;
  while (Clock::now() < give_up) {
    // Our own messages flow (the daemon's grants keep coming); only 1 MiB waits here at once.
    while (id < n && tr.unsent_bytes() < (1u << 20)) {
      ++id;
      for (const rcp::wire::Message& m : {rcp::wire::Message{rcp::wire::FileBegin{id, 0, 0100644, 0, stem + std::to_string(id)}},
                                          rcp::wire::Message{rcp::wire::FileEnd{id, 0, empty}}}) {
        if (rcp::Status st = ch.send(m); !st.ok()) {
          std::printf("rdmapeer unread-answers: sending file %u: %s\n", id, st.error().message().c_str());
          return 1;
        }
      }
    }
    if (id == n && !all_sent) {
      all_sent = true;
      give_up = std::min(give_up, Clock::now() + std::chrono::seconds(30));
    }
    // One poll; when it finds nothing, arm, poll again, and only then sleep (transport.h).
    ev.clear();
    rcp::Status st = ch.poll(ev);
    if (st.ok() && ev.empty() && tr.arm().ok()) {
      st = ch.poll(ev);
      if (st.ok() && ev.empty()) {
        pollfd p{tr.wait_fd(), POLLIN, 0};
        ::poll(&p, 1, 20);
      }
    }
    std::string why = st.ok() ? "" : st.error().message();
    for (const auto& e : ev) {
      if (e.kind == rcp::TransportEvent::Kind::closed) why = e.detail.empty() ? "closed" : e.detail;
      if (e.kind == rcp::TransportEvent::Kind::message) ++answers;
    }
    if (!why.empty()) {
      std::printf("the daemon hung up after %u files announced, %u answers taken (%s)\n", id, answers, why.c_str());
      return 0;
    }
  }
  std::printf("the daemon held the answers to %u files (%u taken) and did not hang up\n", id, answers);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: rdmapeer HOST PORT join-random|join-zero|join-short|garbage SEED | never-complete SECONDS | unread-answers MODULE/DIR N\n");
    return 2;
  }
  const std::string mode = argv[3];
  if (mode == "unread-answers") return argc > 5 ? unread_answers(argv[1], argv[2], argv[4], static_cast<uint32_t>(std::atoi(argv[5]))) : 2;
  // never-complete's 4th argument is a time, not a seed: seeded by it, three peers started
  // together offered the same QP number, and the IB CM rejects a REQ whose (GID, QPN) an
  // open connection already has as a stale connection (seen: 2 of 3 REJECTED in the guest).
  const bool seeded = argc > 4 && mode != "never-complete";
  std::mt19937_64 rng(seeded ? std::strtoull(argv[4], nullptr, 10) : std::random_device{}());
  rcp::wire::Hello h;
  h.ctrl_depth = 64;
  h.rd_init = 16;
  h.rd_resp = 16;
  h.max_sge_rd = 16;
  h.checksums = 2;
  h.max_chunk = 1u << 20;
  h.qps = 2;
  std::vector<uint8_t> pd;
  if (mode == "join-random") {
    pd = rcp::wire::encode_hello_token(h, rcp::wire::kHelloJoin, rng() | 1);
  } else if (mode == "join-zero") {
    pd = rcp::wire::encode_hello_token(h, rcp::wire::kHelloJoin, 0);
  } else if (mode == "join-short") {
    h.flags = rcp::wire::kHelloJoin;  // the token the flag promises is missing (the CM pads with zeros)
    pd = rcp::wire::encode_hello(h);
  } else if (mode == "never-complete") {
    pd = rcp::wire::encode_hello(h);

  } else if (mode == "garbage") {
    pd.resize(56);
    for (auto& b : pd) b = static_cast<uint8_t>(rng());
  } else {
    std::fprintf(stderr, "rdmapeer: unknown mode %s\n", mode.c_str());
    return 2;
  }

  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(argv[1], argv[2], &hints, &res) != 0) {
    std::fprintf(stderr, "rdmapeer: cannot resolve %s\n", argv[1]);
    return 2;
  }
  rdma_event_channel* ch = rdma_create_event_channel();
  rdma_cm_id* id = nullptr;
  if (!ch || rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) != 0) {
    std::perror("rdmapeer: rdma_create_id");
    return 2;
  }
  int rc = 2;
  if (rdma_resolve_addr(id, nullptr, res->ai_addr, 5000) == 0 && wait_event(ch, 7000) == RDMA_CM_EVENT_ADDR_RESOLVED &&
      rdma_resolve_route(id, 5000) == 0 && wait_event(ch, 7000) == RDMA_CM_EVENT_ROUTE_RESOLVED) {
    rdma_conn_param cp{};
    cp.initiator_depth = 1;
    cp.responder_resources = 1;
    cp.retry_count = 7;
    cp.rnr_retry_count = 7;
    cp.qp_num = static_cast<uint32_t>(rng() & 0xffffff);  // no QP behind it
    cp.private_data = pd.data();
    cp.private_data_len = static_cast<uint8_t>(pd.size());
    if (rdma_connect(id, &cp) == 0) {
      std::vector<uint8_t> reply;
      rdma_cm_event_type t = wait_event(ch, 10000, &reply);
      if (mode == "never-complete") {
        // No QP here, so the CM leaves completing the connection to us: we never do.
        std::printf("rdmapeer never-complete: the daemon answered %s; not completing for %s s\n", rdma_event_str(t),
                    argc > 4 ? argv[4] : "0");
        std::fflush(stdout);
        if (argc > 4) sleep(static_cast<unsigned>(std::atoi(argv[4])));
        rc = t == RDMA_CM_EVENT_CONNECT_RESPONSE ? 0 : 1;
      } else if (t == RDMA_CM_EVENT_REJECTED) {
        auto hr = rcp::wire::decode_hello(reply);
        std::printf("rdmapeer %s: refused%s\n", mode.c_str(),
                    hr.ok() && (hr->flags & rcp::wire::kHelloJoin) ? " (rcpd: join refused)" : hr.ok() ? " (rcpd)" : "");
        rc = 0;
      } else {
        std::printf("rdmapeer %s: NOT refused: %s\n", mode.c_str(), rdma_event_str(t));
        if (t == RDMA_CM_EVENT_CONNECT_RESPONSE || t == RDMA_CM_EVENT_ESTABLISHED) rdma_disconnect(id);
        rc = 1;
      }
    } else {
      std::perror("rdmapeer: rdma_connect");
    }
  } else {
    std::fprintf(stderr, "rdmapeer: could not resolve a route to %s\n", argv[1]);
  }
  freeaddrinfo(res);
  rdma_destroy_id(id);
  rdma_destroy_event_channel(ch);
  return rc;
}
