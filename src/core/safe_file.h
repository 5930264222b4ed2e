// SPDX-License-Identifier: Apache-2.0
// An output file opened the way a root tool must open one: perf-monitor runs as root and is
// handed paths in directories other users can write (`-o ~user/run.jsonl`, `report
// ~user/run.jsonl` writing ~user/run.html). Such a user can plant a symbolic link there to
// /etc/shadow, or a file of their own, between any check and the open; so
//
// - everything happens relative to the parent directory, opened once (the last component cannot
//   be swapped under a path that is looked up again);
// - a symbolic link as the last component is not followed, with one exception: a link owned by
//   the effective user in a directory that no other user can write (/dev/stdout, /dev/fd/N,
//   /proc/self/fd/N) — nobody else could have put it there or changed it, so it is the caller's
//   own choice, and followed like the path it names;
// - a regular file of another user is never truncated or replaced;
// - a regular file is written to a temporary file created beside it (O_CREAT|O_EXCL|O_NOFOLLOW:
//   a fresh inode, never someone else's) and renamed over the path by commit(); without commit
//   (a failure, an early return) the temporary file is removed and the path left as it was;
// - a FIFO, a character device (/dev/null) or a socket that exists is opened as it is, never
//   created or truncated.
// The directories above the last component are followed as the kernel resolves them.
#pragma once

#include <sys/types.h>

#include <string>

#include "core/error.h"
#include "core/fd.h"

namespace pm {

class OutputFile {
 public:
  // Errors (Errc::kInvalidArgument: the path cannot be used) say why in a few words, without the
  // path: "it is a directory", "it is a symbolic link ..."; the caller names the path.
  static Result<OutputFile> open(const std::string& path);

  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) = delete;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();  // without commit(): the temporary file is removed

  [[nodiscard]] int fd() const { return fd_.get(); }
  // Where the bytes are until commit(): the temporary file ("" when written in place).
  [[nodiscard]] const std::string& temp_path() const { return temp_path_; }

  // Renames the temporary file over the path (nothing to do for a device, a FIFO or an own
  // file reached through the caller's own link). When that cannot be done, the temporary file
  // is kept and the error says where it is.
  Status commit();

 private:
  OutputFile() = default;
  std::string path_;
  UniqueFd dir_;           // the parent directory (O_PATH)
  UniqueFd fd_;            // where to write
  std::string base_;       // the last component of path_
  std::string temp_;       // the temporary file's name in dir_ ("": written in place)
  std::string temp_path_;  // the same, as a path for messages
  pid_t owner_ = 0;        // a forked child that unwinds must not remove the parent's file
};

}  // namespace pm
