//===- Files.h - which paths the tools and the runner read or write -------===//
//
// Shared by the compiler's tools (mpc-opt, mpc-compile, mpc-import-onnx)
// and the training executable's runner, which links LLVM's support library
// but not MLIR: what may be read whole, whether two paths name one file
// (an output is never written over an input), and whether a written
// stream took every byte (a full disk).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_SUPPORT_FILES_H
#define MPC_SUPPORT_FILES_H

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace mpc::files {

/// Why `path` cannot be read whole ("PATH: not a regular file (a device);
/// give a file"), or "" where it can: a regular file or a pipe (a missing
/// path too: its opener says so). A device never ends (/dev/zero, read
/// whole, hung the readers); a folder or a socket holds no file.
inline std::string notAFile(llvm::StringRef path) {
  namespace fs = llvm::sys::fs;
  fs::file_status status;
  if (fs::status(path, status))
    return "";
  fs::file_type type = status.type();
  if (type == fs::file_type::regular_file || type == fs::file_type::fifo_file)
    return "";
  const char *what = type == fs::file_type::directory_file ? "a folder"
                     : type == fs::file_type::character_file ||
                             type == fs::file_type::block_file
                         ? "a device"
                         : "a socket or other special file";
  return (path + ": not a regular file (" + what + "); give a file").str();
}

/// Whether paths `a` and `b` name one file: the same file where both exist
/// (links and other spellings included), else the same absolute path with
/// its dots removed.
inline bool sameFile(llvm::StringRef a, llvm::StringRef b) {
  namespace fs = llvm::sys::fs;
  bool same = false;
  if (fs::exists(a) && fs::exists(b))
    return !fs::equivalent(a, b, same) && same;
  auto absolute = [](llvm::StringRef p) {
    llvm::SmallString<256> path(p);
    fs::make_absolute(path);
    llvm::sys::path::remove_dots(path, /*remove_dot_dot=*/true);
    return std::string(path);
  };
  return absolute(a) == absolute(b);
}

/// Why `os` did not take every byte written to it (flushed first), or ""
/// where it did. The stream's error is cleared: an uncleared one aborts
/// the process when the stream closes ("IO failure on output stream").
inline std::string writeError(llvm::raw_fd_ostream &os) {
  os.flush();
  if (!os.has_error())
    return "";
  std::string why = os.error().message();
  os.clear_error();
  return why;
}

/// Has LLVM's fatal errors speak as `program`'s own: "PROGRAM: error: ..."
/// ("error: ..." where `program` is null, as the training executable's
/// messages read), exit status 1. The one a user meets is a stream that
/// failed when it closed: `--help`, `--version` or a listing to a full
/// disk, which LLVM reports as "LLVM ERROR: IO failure on output stream:
/// No space left on device"; it reads "cannot write the output: No space
/// left on device". `program` must outlive the process's exit (a string
/// literal).
inline void reportFatalErrorsAs(const char *program) {
  llvm::install_fatal_error_handler(
      [](void *data, const char *reason, bool) {
        static constexpr char kStream[] = "IO failure on output stream: ";
        const char *name = static_cast<const char *>(data);
        bool stream = std::strncmp(reason, kStream, sizeof kStream - 1) == 0;
        std::fprintf(stderr, "%s%serror: %s%s\n", name ? name : "",
                     name ? ": " : "",
                     stream ? "cannot write the output: " : "",
                     stream ? reason + sizeof kStream - 1 : reason);
        std::fflush(stderr);
      },
      const_cast<char *>(program));
}

} // namespace mpc::files

#endif // MPC_SUPPORT_FILES_H
