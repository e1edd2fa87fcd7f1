//===- CompileConfig.h - what mpc-compile links with ------------*- C++ -*-===//
//
// The build's own paths and features, defined in CompileConfig.cpp, which
// CMake generates in the build folder (tools/mpc-compile/CMakeLists.txt):
// only that small file differs between two checkouts' builds, so the
// compiler's own translation unit is served from the compiler cache.
// Lists are `;`-separated; an empty string is an absent library.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_TOOLS_COMPILECONFIG_H
#define MPC_TOOLS_COMPILECONFIG_H

namespace mpc::config {

/// The compiler driver (clang++) the build was made with.
extern const char *const linkDriver;
/// Its flags for a link (-fuse-ld=lld, the sanitizers).
extern const char *const linkDriverFlags;
/// ld.lld's command line as the driver gave it at configuration, with
/// the placeholders mpc-link-output and mpc-link-inputs.o; empty: link
/// through the driver.
extern const char *const linkerCommand;
extern const char *const runnerLib;
extern const char *const runtimeCpuLibs;
extern const char *const runnerLinkLibs;
extern const bool haveCudaRuntime;
extern const char *const commSingleLib;
extern const bool haveMpi;
extern const char *const commMpiLibs;
extern const bool haveNccl;
extern const char *const commNcclLib;
extern const char *const commNcclEmulatedLib;
extern const char *const runtimeCudaLibs;
extern const bool haveCudaEmulation;
extern const char *const runtimeCudaEmulatedLibs;
extern const char *const runtimeCudaRacecheckLibs;

} // namespace mpc::config

#endif // MPC_TOOLS_COMPILECONFIG_H
