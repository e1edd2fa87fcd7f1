//===- Parallel.cpp - the CPU kernels' thread pool ------------------------===//

#include "Parallel.h"
#include "Blas.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace {

/// Workers wait for a job, take blocks from a shared counter until none is
/// left, and report. They are detached and never stopped: a kernel may end
/// the process (a bad label) on any thread, with no pool to tear down.
/// Growing --threads adds workers; a job uses the first threadCount() - 1.
struct Pool {
  std::mutex mutex;
  std::condition_variable wake, done;
  int workers = 0;
  uint64_t generation = 0;

  void (*body)(void *, int64_t, int64_t) = nullptr;
  void *context = nullptr;
  int64_t n = 0, grain = 1, blocks = 0;
  int participants = 0, active = 0;
  std::atomic<int64_t> next{0};

  void work() {
    for (int64_t b = next.fetch_add(1); b < blocks; b = next.fetch_add(1))
      body(context, b * grain, std::min(n, (b + 1) * grain));
  }

  void loop(int index) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return generation != seen; });
      seen = generation;
      if (index >= participants)
        continue;
      lock.unlock();
      work();
      lock.lock();
      if (--active == 0)
        done.notify_one();
    }
  }

  void run(int threads, int64_t count, int64_t blockSize,
           void (*fn)(void *, int64_t, int64_t), void *ctx) {
    std::unique_lock<std::mutex> lock(mutex);
    while (workers < threads - 1) {
      int index = workers++;
      std::thread([this, index] { loop(index); }).detach();
    }
    body = fn, context = ctx, n = count, grain = blockSize;
    blocks = (count + blockSize - 1) / blockSize;
    participants = static_cast<int>(std::min<int64_t>(threads - 1, blocks - 1));
    active = participants;
    next.store(0);
    ++generation;
    lock.unlock();
    wake.notify_all();
    work();
    lock.lock();
    done.wait(lock, [&] { return active == 0; });
  }
};

Pool &pool() {
  static Pool *instance = new Pool; // never destroyed (see Pool)
  return *instance;
}

/// A block that starts a parallel loop of its own runs it in place.
thread_local bool insideJob = false;

} // namespace

namespace mpcrt {

void parallelBlocks(int64_t n, int64_t grain,
                    void (*body)(void *, int64_t, int64_t), void *context) {
  int threads = threadCount();
  if (threads <= 1 || insideJob || n <= grain) {
    for (int64_t begin = 0; begin < n; begin += grain)
      body(context, begin, std::min(n, begin + grain));
    return;
  }
  struct Guarded {
    void (*body)(void *, int64_t, int64_t);
    void *context;
  } guarded{body, context};
  pool().run(
      threads, n, grain,
      [](void *g, int64_t begin, int64_t end) {
        auto *job = static_cast<Guarded *>(g);
        bool outer = insideJob;
        insideJob = true;
        job->body(job->context, begin, end);
        insideJob = outer;
      },
      &guarded);
}

} // namespace mpcrt
