#include "hash/hash_pool.h"

#include "auth/chunk_mac.h"

#include <sys/eventfd.h>
#include <unistd.h>

namespace rcp {

Result<std::unique_ptr<HashPool>> HashPool::create(Checksum algo, unsigned threads) {
  return start(std::unique_ptr<HashPool>(new HashPool(algo)), threads);
}

Result<std::unique_ptr<HashPool>> HashPool::create_keyed(const std::array<uint8_t, 32>& key, unsigned threads) {
  std::unique_ptr<HashPool> p(new HashPool(Checksum::sha256));
  p->key_ = key;
  return start(std::move(p), threads);
}

Result<std::unique_ptr<HashPool>> HashPool::start(std::unique_ptr<HashPool> p, unsigned threads) {
  p->efd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!p->efd_.valid()) return sys_error("eventfd");
  for (unsigned i = 0; i < std::max(1u, threads); ++i) p->threads_.emplace_back([raw = p.get()] { raw->work(); });
  return p;
}

HashPool::~HashPool() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void HashPool::submit(Job job) {
  {
    std::lock_guard lk(mu_);
    jobs_.push_back(std::move(job));
    ++in_flight_;
  }
  cv_.notify_one();
}

void HashPool::take(std::vector<Done>& out) {
  uint64_t v;
  while (::read(efd_.get(), &v, sizeof v) == sizeof v) {
  }
  std::lock_guard lk(mu_);
  in_flight_ -= done_.size();
  for (auto& d : done_) out.push_back(d);
  done_.clear();
}

size_t HashPool::in_flight() const {
  std::lock_guard lk(mu_);
  return in_flight_;
}

void HashPool::work() {
  Hasher h(algo_);
  for (;;) {
    Job job;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and nothing left to do
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    Done d{job.id, {}};
    if (key_) {
      uint32_t len = 0;
      for (auto piece : job.pieces) len += static_cast<uint32_t>(piece.size());
      auth::ChunkMac m(*key_);
      m.begin(job.file_id, job.offset, len);
      for (auto piece : job.pieces) m.update(piece);
      d.digest = m.finish();
    } else if (job.pieces.size() == 1) {
      d.digest = digest_of(algo_, job.pieces[0]);
    } else {
      for (auto piece : job.pieces) h.update(piece);
      d.digest = h.finish();
    }
    {
      std::lock_guard lk(mu_);
      done_.push_back(d);
    }
    const uint64_t one = 1;
    (void)!::write(efd_.get(), &one, sizeof one);
  }
}

}  // namespace rcp
