//===- Profile.cpp - the emulated kernels' global memory accesses ---------===//
//
// With MPC_EMULATION_PROFILE=FILE, the kernels built for the race check
// (whose every load and store the race check sees first) also count how
// they access device memory, per launch site, as a GPU's load/store units
// would see it: the accesses of a warp's 32 lanes that the same
// instruction makes (the n-th execution of one instruction by each lane,
// as the lanes of a warp run it together) are one request, which moves the
// distinct 32-byte sectors it touches. A lane's accesses that continue one
// another, up to 16 bytes, count as one access (the host compiler splits
// the kernels' 16-byte vector accesses into narrower ones; a GPU makes
// each as one, and two scalar accesses of neighbours count as one here
// too). Per site: requests, sectors, the
// bytes the lanes asked for, and the distinct sectors each launch touched
// (what DRAM must move at least). Bytes asked for over sectors moved is
// the sector efficiency (100% coalesced); bytes per request shows the
// width of the accesses (512 for 16-byte vector accesses of a full warp);
// sectors moved over distinct sectors shows how often each is fetched
// again (from L2 or DRAM). The kernels' arithmetic, caches and timing are
// not modelled: this predicts the memory traffic, not the time.
//
// Written at exit as JSON lines, one per launch site
// (bench/emulated_profile.py prints the table).
//
//===----------------------------------------------------------------------===//

#include "Emulation.h"
#include "Racecheck.h"

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
  uint64_t requests = 0, sectors = 0, bytes = 0;
  bool write = false;
};

struct Site {
  uint64_t launches = 0, threads = 0, requests = 0, sectors = 0, bytes = 0,
           distinctSectors = 0, writeRequests = 0;
  /// By instruction (the access's return address in the kernel's code)
  /// and direction (a copy reads and writes from one call).
  std::map<std::pair<const void *, bool>, Instruction> instructions;
};

/// One warp-wide request being gathered: the sectors its lanes touch.
struct Request {
  uint64_t bytes = 0;
  std::vector<uint64_t> sectors;
  bool write = false;
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

/// A lane's accesses that continue one another (the host compiler splits
/// a 16-byte vector access into narrower ones, which a GPU makes as one):
/// where the last one began, its bytes so far, and its request.
struct Run {
  uintptr_t start = 0;
  size_t bytes = 0;
  struct Request *request = nullptr;
};
constexpr size_t kWidestAccess = 16;

struct Profile {
  std::string path;
  /// Per thread of the running block: its open read and write runs.
  std::vector<std::array<Run, 2>> runs;
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
      Instruction &i = site.instructions[{key.pc, request.write}];
      ++i.requests;
      i.sectors += request.sectors.size();
      i.bytes += request.bytes;
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
    std::fprintf(stderr,
                 "error: CUDA emulation: cannot write the profile to "
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
        "\"sectors\": %llu, \"bytes\": %llu, "
        "\"distinct_sectors\": %llu}\n",
        where.first.c_str(), where.second, (unsigned long long)s.launches,
        (unsigned long long)s.threads, (unsigned long long)s.requests,
        (unsigned long long)s.writeRequests, (unsigned long long)s.sectors,
        (unsigned long long)s.bytes, (unsigned long long)s.distinctSectors);
    for (const auto &[at, i] : s.instructions)
      std::fprintf(out,
                   "{\"site\": \"%s:%d\", \"code\": \"%s\", \"write\": %s, "
                   "\"requests\": %llu, \"sectors\": %llu, \"bytes\": "
                   "%llu}\n",
                   where.first.c_str(), where.second, code[at.first].c_str(),
                   i.write ? "true" : "false", (unsigned long long)i.requests,
                   (unsigned long long)i.sectors, (unsigned long long)i.bytes);
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
  // An access that continues the lane's last one in the same direction,
  // up to 16 bytes in all, is part of it; otherwise the n-th execution of
  // its instruction by this lane joins the warp's request for that.
  auto at = reinterpret_cast<uintptr_t>(address);
  Run &run = p.runs[raceClock.thread][isWrite];
  if (!(run.request && at == run.start + run.bytes &&
        run.bytes + bytes <= kWidestAccess)) {
    uint64_t execution = p.executions[raceClock.thread][pc]++;
    run.request = &p.warps[raceClock.thread / 32][{pc, execution}];
    run.start = at;
    run.bytes = 0;
  }
  run.bytes += bytes;
  Request &r = *run.request;
  r.bytes += bytes;
  r.write = isWrite;
  auto first = at / kSectorBytes;
  auto last = (at + bytes - 1) / kSectorBytes;
  for (uint64_t s = first; s <= last; ++s) {
    bool seen = false;
    for (uint64_t t : r.sectors)
      seen |= t == s;
    if (!seen)
      r.sectors.push_back(s);
    p.launchSectors.insert(s);
  }
}

} // namespace mpcemu
