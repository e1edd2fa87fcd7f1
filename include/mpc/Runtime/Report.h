//===- Report.h - how the run time reports errors and warnings --*- C++ -*-===//
//
// Every error, warning and note of a training executable's run time is a
// line that begins with the executable's name ("train: error: ..."), as the
// tools' do ("mpc-compile: error: ..."), written in one piece.
//
// No allocation and no instrumented access: the emulated kernels are built
// with ThreadSanitizer's instrumentation, whose hooks the race check
// answers, and these inline functions may be the copies such a unit
// emitted; the race check reports through them.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_REPORT_H
#define MPC_RUNTIME_REPORT_H

#include <cstdarg>
#include <cstdio>
#include <cstring>

#if defined(__clang__) || defined(__GNUC__)
#define MPCRT_REPORT_UNINSTRUMENTED __attribute__((no_sanitize("thread")))
#else
#define MPCRT_REPORT_UNINSTRUMENTED
#endif

namespace mpcrt::errors {

/// The training executable's name, which every run-time error, warning
/// and note begins with; empty until the runner sets it from argv[0]. A
/// character array, not a string: it outlives the exit-time handlers that
/// print.
MPCRT_REPORT_UNINSTRUMENTED inline char *programName() {
  static char name[128];
  return name;
}

/// Sets programName() to the last component of `path` (cut to 127 bytes).
MPCRT_REPORT_UNINSTRUMENTED inline void setProgramName(const char *path) {
  const char *slash = std::strrchr(path, '/');
  std::snprintf(programName(), 128, "%s", slash ? slash + 1 : path);
}

/// "NAME: KIND: ", or "KIND: " without a name (KIND: error, warning or
/// note), held by value.
struct Prefix {
  char text[160];
};
MPCRT_REPORT_UNINSTRUMENTED inline Prefix prefix(const char *kind) {
  Prefix p;
  const char *name = programName();
  std::snprintf(p.text, sizeof p.text, "%s%s%s: ", name, *name ? ": " : "",
                kind);
  return p;
}

/// Writes prefix(kind) and the printf-formatted message to stderr in one
/// write (the ranks of a job share the stream, and a line written in
/// pieces interleaves with theirs); a message past 8 KiB is cut there.
MPCRT_REPORT_UNINSTRUMENTED inline void
vreport(const char *kind, const char *format, va_list args) {
  char line[8192];
  int at = std::snprintf(line, sizeof line, "%s", prefix(kind).text);
  if (at < 0)
    at = 0;
  int n = std::vsnprintf(line + at, sizeof line - static_cast<size_t>(at),
                         format, args);
  size_t length =
      static_cast<size_t>(at) + (n > 0 ? static_cast<size_t>(n) : size_t(0));
  if (length >= sizeof line) { // cut: end the line
    length = sizeof line - 1;
    line[length - 1] = '\n';
  }
  std::fwrite(line, 1, length, stderr);
  std::fflush(stderr);
}

/// "NAME: error: " and the formatted message (which ends its own line).
MPCRT_REPORT_UNINSTRUMENTED __attribute__((format(printf, 1, 2))) inline void
reportError(const char *format, ...) {
  va_list args;
  va_start(args, format);
  vreport("error", format, args);
  va_end(args);
}

/// "NAME: warning: " and the formatted message (which ends its own line).
MPCRT_REPORT_UNINSTRUMENTED __attribute__((format(printf, 1, 2))) inline void
reportWarning(const char *format, ...) {
  va_list args;
  va_start(args, format);
  vreport("warning", format, args);
  va_end(args);
}

/// "NAME: note: " and the formatted message (which ends its own line).
MPCRT_REPORT_UNINSTRUMENTED __attribute__((format(printf, 1, 2))) inline void
reportNote(const char *format, ...) {
  va_list args;
  va_start(args, format);
  vreport("note", format, args);
  va_end(args);
}

} // namespace mpcrt::errors

#endif // MPC_RUNTIME_REPORT_H
