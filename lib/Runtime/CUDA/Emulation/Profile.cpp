//===- Profile.cpp - the emulated kernels' global memory accesses ---------===//
//
// With MPC_EMULATION_PROFILE=FILE, the kernels built for the race check
// (whose every load and store the race check sees first) also count how
// they access device memory, per launch site, as a GPU's load/store units
// would see it: the accesses of a warp's 32 lanes that the same
// instruction makes (the n-th execution of one instruction by each lane,
// as the lanes of a warp run it together) are one request, which moves the
// distinct 32-byte sectors it touches. A lane's accesses that adjoin one
// another within an aligned 16 bytes count as one access, in either order
// and with up to seven of its other accesses between them (the host
// compiler splits the kernels' 16-byte vector accesses into narrower
// ones and may interleave the pieces of several; a GPU makes each as one,
// and two scalar accesses of neighbours count as one here too), and an
// access wider than 16 bytes (a struct the host compiler
// copies at once) is as many 16-byte ones as a GPU would make, each its
// own request. Per site: requests, sectors, the bytes the lanes asked for,
// the distinct bytes each request asked for (lanes reading the same
// value, a broadcast, ask for its bytes once), and the distinct sectors
// each launch touched (what DRAM must move at least). Distinct bytes
// asked for over sectors moved is the sector efficiency (100%
// coalesced); bytes per request shows the width of the accesses (512 for
// 16-byte vector accesses of a full warp);
// sectors moved over distinct sectors shows how often each is fetched
// again (from L2 or DRAM). The kernels' arithmetic, caches and timing are
// not modelled: this predicts the memory traffic, not the time.
//
// Written at exit as JSON lines, one per launch site
// (bench/emulated_profile.py prints the table).
//
//===----------------------------------------------------------------------===//

#include "mpc/Runtime/Report.h"

#include "Emulation.h"
#include "Racecheck.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#undef threadIdx
#undef blockIdx
#undef blockDim
#undef gridDim

namespace mpcemu {
namespace {

constexpr uint64_t kSectorBytes = 32;

/// One instruction's requests.
struct Instruction {
  uint64_t requests = 0, sectors = 0, bytes = 0, distinctBytes = 0;
  bool write = false;
};

struct Site {
  uint64_t launches = 0, threads = 0, requests = 0, sectors = 0, bytes = 0,
           distinctBytes = 0, distinctSectors = 0, writeRequests = 0;
  /// By instruction (the access's return address in the kernel's code)
  /// and direction (a copy reads and writes from one call).
  std::map<std::pair<const void *, bool>, Instruction> instructions;
};

/// One warp-wide request being gathered: the sectors its lanes touch and,
/// for each, which of its bytes (bit k: byte k).
struct Request {
  uint64_t bytes = 0;
  std::vector<uint64_t> sectors;
  std::vector<uint32_t> touched;
  bool write = false;
  uint64_t distinctBytes() const {
    uint64_t n = 0;
    for (uint32_t mask : touched)
      n += __builtin_popcount(mask);
    return n;
  }
};

struct InstructionKey {
  const void *pc;
  uint64_t execution;
  bool operator==(const InstructionKey &o) const {
    return pc == o.pc && execution == o.execution;
  }
};
struct InstructionHash {
  size_t operator()(const InstructionKey &k) const {
    return std::hash<const void *>()(k.pc) * 31 + k.execution;
  }
};

/// A lane's accesses that continue one another, either way, within an
/// aligned 16 bytes (the host compiler splits a 16-byte vector access
/// into narrower ones, which a GPU makes as one, and may make the upper
/// half first): the lowest address, the bytes so far, and the request.
struct Run {
  uintptr_t start = 0;
  size_t bytes = 0;
  struct Request *request = nullptr;
};
constexpr size_t kWidestAccess = 16;
/// A lane's last runs in one direction, the oldest replaced first: the
/// host compiler may interleave the pieces of several vector accesses (a
/// loop's unrolled loads: the first halves of four rows, then their
/// second halves), so a piece may continue a run other than the last.
constexpr size_t kOpenRuns = 8;
struct OpenRuns {
  std::array<Run, kOpenRuns> runs;
  size_t next = 0;
};

struct Profile {
  std::string path;
  /// Per thread of the running block: its open read and write runs.
  std::vector<std::array<OpenRuns, 2>> runs;
  std::map<std::pair<std::string, int>, Site> sites;
  /// Per thread of the running block: how often it ran each instruction.
  std::vector<std::unordered_map<const void *, uint64_t>> executions;
  /// Per warp of the running block: its requests so far.
  std::vector<std::unordered_map<InstructionKey, Request, InstructionHash>>
      warps;
  std::unordered_set<uint64_t> launchSectors;
  /// The running launch's site (null between launches).
  Site *site = nullptr;
};
Profile *profile = nullptr;

void endBlock() {
  if (!profile->site)
    return;
  for (auto &warp : profile->warps) {
    for (auto &[key, request] : warp) {
      Site &site = *profile->site;
      ++site.requests;
      site.writeRequests += request.write;
      site.sectors += request.sectors.size();
      site.bytes += request.bytes;
      uint64_t distinct = request.distinctBytes();
      site.distinctBytes += distinct;
      Instruction &i = site.instructions[{key.pc, request.write}];
      ++i.requests;
      i.sectors += request.sectors.size();
      i.bytes += request.bytes;
      i.distinctBytes += distinct;
      i.write = request.write;
    }
    warp.clear();
  }
  for (auto &counts : profile->executions)
    counts.clear();
  for (auto &lane : profile->runs)
    lane = {};
}

void endLaunch() {
  if (profile->site)
    profile->site->distinctSectors += profile->launchSectors.size();
  profile->launchSectors.clear();
  profile->site = nullptr;
}

void write() {
  FILE *out =
      profile->path == "-" ? stderr : std::fopen(profile->path.c_str(), "w");
  if (!out) {
    mpcrt::errors::reportError("CUDA emulation: cannot write the profile to "
                               "'%s'\n",
                               profile->path.c_str());
    return;
  }
  std::vector<const void *> pcs;
  for (const auto &[where, s] : profile->sites)
    for (const auto &[at, i] : s.instructions)
      pcs.push_back(at.first);
  std::vector<CodeLocation> located = locate(pcs);
  std::map<const void *, std::string> code;
  for (size_t i = 0; i < pcs.size(); ++i)
    code[pcs[i]] =
        located[i].line.empty() ? located[i].address : located[i].line;
  for (const auto &[where, s] : profile->sites) {
    std::fprintf(
        out,
        "{\"site\": \"%s:%d\", \"launches\": %llu, \"threads\": "
        "%llu, \"requests\": %llu, \"write_requests\": %llu, "
        "\"sectors\": %llu, \"bytes\": %llu, \"distinct_bytes\": %llu, "
        "\"distinct_sectors\": %llu}\n",
        where.first.c_str(), where.second, (unsigned long long)s.launches,
        (unsigned long long)s.threads, (unsigned long long)s.requests,
        (unsigned long long)s.writeRequests, (unsigned long long)s.sectors,
        (unsigned long long)s.bytes, (unsigned long long)s.distinctBytes,
        (unsigned long long)s.distinctSectors);
    for (const auto &[at, i] : s.instructions)
      std::fprintf(out,
                   "{\"site\": \"%s:%d\", \"code\": \"%s\", \"write\": %s, "
                   "\"requests\": %llu, \"sectors\": %llu, \"bytes\": "
                   "%llu, \"distinct_bytes\": %llu}\n",
                   where.first.c_str(), where.second, code[at.first].c_str(),
                   i.write ? "true" : "false", (unsigned long long)i.requests,
                   (unsigned long long)i.sectors, (unsigned long long)i.bytes,
                   (unsigned long long)i.distinctBytes);
  }
  if (out != stderr)
    std::fclose(out);
}

Profile *start() {
  const char *path = std::getenv("MPC_EMULATION_PROFILE");
  if (!path || !*path)
    return nullptr;
  auto *p = new Profile();
  p->path = path;
  atBlockEnd(endBlock);
  atLaunchEnd(endLaunch);
  std::atexit(write);
  return p;
}

} // namespace

bool profiling() {
  static bool on = (profile = start()) != nullptr;
  return on;
}

namespace {

/// One access of at most 16 bytes (profileAccess splits wider ones).
void profilePiece(Profile &p, uintptr_t at, size_t bytes, bool isWrite,
                  const void *pc) {
  // An access next to one of the lane's open runs in the same direction
  // (before or after it), within the run's aligned 16 bytes, is part of it;
  // otherwise the n-th execution of its instruction by this lane joins
  // the warp's request for that, in a new run.
  OpenRuns &open = p.runs[raceClock.thread][isWrite];
  Run *run = nullptr;
  for (Run &r : open.runs) {
    if (!r.request)
      continue;
    uintptr_t from = std::min(at, r.start),
              to = std::max(at + bytes, r.start + r.bytes);
    if ((at == r.start + r.bytes || at + bytes == r.start) &&
        from / kWidestAccess == (to - 1) / kWidestAccess)
      run = &r;
  }
  if (run) {
    run->start = std::min(at, run->start);
  } else {
    run = &open.runs[open.next];
    open.next = (open.next + 1) % kOpenRuns;
    uint64_t execution = p.executions[raceClock.thread][pc]++;
    run->request = &p.warps[raceClock.thread / 32][{pc, execution}];
    run->start = at;
    run->bytes = 0;
  }
  run->bytes += bytes;
  Request &r = *run->request;
  r.bytes += bytes;
  r.write = isWrite;
  for (uintptr_t byte = at, end = at + bytes; byte < end;) {
    uint64_t s = byte / kSectorBytes;
    uintptr_t sectorEnd = std::min<uintptr_t>(end, (s + 1) * kSectorBytes);
    unsigned from = byte % kSectorBytes, n = unsigned(sectorEnd - byte);
    uint32_t mask = uint32_t(((uint64_t(1) << n) - 1) << from);
    size_t k = 0;
    while (k < r.sectors.size() && r.sectors[k] != s)
      ++k;
    if (k == r.sectors.size()) {
      r.sectors.push_back(s);
      r.touched.push_back(0);
    }
    r.touched[k] |= mask;
    p.launchSectors.insert(s);
    byte = sectorEnd;
  }
}

} // namespace

void profileAccess(const char *address, size_t bytes, bool isWrite,
                   const void *pc) {
  Profile &p = *profile;
  if (!p.site) { // the launch's first access (endLaunch clears it)
    p.site = &p.sites[{raceClock.file, raceClock.line}];
    ++p.site->launches;
    const dim3 &g = builtins.gridDim, &d = builtins.blockDim;
    unsigned threads = d.x * d.y * d.z;
    p.site->threads += uint64_t(g.x) * g.y * g.z * threads;
    p.executions.assign(threads, {});
    p.warps.assign((threads + 31) / 32, {});
    p.runs.assign(threads, {});
  }
  // A GPU moves at most 16 bytes per lane and instruction: a wider access
  // (a 32-byte struct the host compiler copies at once) is several.
  auto at = reinterpret_cast<uintptr_t>(address);
  for (size_t done = 0; done < bytes; done += kWidestAccess)
    profilePiece(p, at + done, std::min(kWidestAccess, bytes - done), isWrite,
                 pc);
}

} // namespace mpcemu
