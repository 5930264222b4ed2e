// SPDX-License-Identifier: Apache-2.0
#include "core/safe_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

namespace pm {
namespace {

Error bad(std::string why) { return make_error(Errc::kInvalidArgument, std::move(why)); }

std::string another_user(const char* what, uid_t uid) {
  return std::string(what) + " of another user (uid " + std::to_string(uid) + "): perf-monitor does not overwrite it";
}

// Nobody but the effective user (or root) can add, remove or rename entries in the directory:
// a link found there was put there by one of them.
bool only_mine(int dir, uid_t me) {
  struct stat st {};
  if (::fstat(dir, &st) != 0) return false;
  return (st.st_uid == me || st.st_uid == 0) && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

std::string random_suffix() {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  unsigned char bytes[8] = {};
  if (::getrandom(bytes, sizeof(bytes), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(bytes))) {
    // Unpredictable enough is not needed: O_EXCL makes a taken name a retry, never a risk.
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t v = static_cast<uint64_t>(ts.tv_nsec) ^ (static_cast<uint64_t>(::getpid()) << 32);
    std::memcpy(bytes, &v, sizeof(bytes));
  }
  std::string s;
  for (unsigned char b : bytes) s += kChars[b % (sizeof(kChars) - 1)];
  return s;
}

}  // namespace

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)),
      dir_(std::move(other.dir_)),
      fd_(std::move(other.fd_)),
      base_(std::move(other.base_)),
      temp_(std::exchange(other.temp_, std::string())),
      temp_path_(std::move(other.temp_path_)),
      owner_(other.owner_) {}

OutputFile::~OutputFile() {
  if (!temp_.empty() && ::getpid() == owner_) ::unlinkat(dir_.get(), temp_.c_str(), 0);
}

Result<OutputFile> OutputFile::open(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty() || base == "." || base == "..") return bad("it is a directory");

  OutputFile f;
  f.path_ = path;
  f.base_ = base;
  f.owner_ = ::getpid();
  f.dir_.reset(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!f.dir_) return bad(std::strerror(errno));
  const int d = f.dir_.get();
  const uid_t me = ::geteuid();

  // Classify, then open what was seen; a swap in between is seen at the open (O_NOFOLLOW,
  // O_EXCL, fstat of what was opened) and classified again.
  for (int attempt = 0; attempt < 4; ++attempt) {
    struct stat st {};
    bool exists = ::fstatat(d, base.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (!exists && errno != ENOENT) return bad(std::strerror(errno));

    if (exists && S_ISLNK(st.st_mode)) {
      if (st.st_uid != me) {
        return bad("it is a symbolic link of another user (uid " + std::to_string(st.st_uid) +
                   "): perf-monitor does not follow it");
      }
      if (!only_mine(d, me)) {
        return bad(
            "it is a symbolic link in a directory that another user can write: perf-monitor does not "
            "follow it (name the file it points to)");
      }
      // The caller's own link (/dev/stdout): written where it leads, in place, as a path there
      // would be, except that nothing is created through it.
      int fd = ::openat(d, base.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
      if (fd < 0 && errno == ENXIO) return bad("it links to a FIFO that no process reads, or a socket");
      if (fd < 0 && errno == ENOENT)
        return bad("it is a symbolic link to nothing: perf-monitor creates no file through a link");
      if (fd < 0) return bad(std::strerror(errno));
      f.fd_.reset(fd);
      struct stat to {};
      if (::fstat(fd, &to) != 0) return bad(std::strerror(errno));
      if (S_ISREG(to.st_mode)) {
        if (to.st_uid != me) return bad(another_user("it links to a file", to.st_uid));
        if (::ftruncate(fd, 0) != 0) return bad(std::strerror(errno));
      }
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      return f;
    }
    if (exists && S_ISDIR(st.st_mode)) return bad("it is a directory");
    if (exists && S_ISREG(st.st_mode) && st.st_uid != me) return bad(another_user("it is a file", st.st_uid));

    if (!exists || S_ISREG(st.st_mode)) {
      // A replaced file keeps its permissions (never wider for a moment: umask applies at
      // creation, fchmod only restores).
      mode_t mode = exists ? (st.st_mode & 0777) : 0644;
      std::string stem = base.substr(0, 200);  // room for the suffix within NAME_MAX
      for (int i = 0; i < 100; ++i) {
        std::string name = "." + stem + "." + random_suffix();
        int fd = ::openat(d, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0 && errno == EEXIST) continue;
        if (fd < 0) return bad(std::strerror(errno));
        f.fd_.reset(fd);
        f.temp_ = name;
        f.temp_path_ = dir == "/" ? "/" + name : slash == std::string::npos ? name : dir + "/" + name;
        if (exists) ::fchmod(fd, mode);
        return f;
      }
      return bad("no free name for a temporary file beside it");
    }

    // A FIFO, a device, a socket: opened as it is. Non-blocking first: a FIFO that nobody reads
    // would otherwise block the open forever.
    int fd = ::openat(d, base.c_str(), O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    if (fd < 0 && (errno == ELOOP || errno == ENOENT)) continue;  // swapped for a link, or gone
    if (fd < 0 && errno == ENXIO) {
      return bad(S_ISSOCK(st.st_mode) ? "it is a socket" : "it is a FIFO that no process reads");
    }
    if (fd < 0) return bad(std::strerror(errno));
    struct stat now {};
    if (::fstat(fd, &now) != 0 || S_ISREG(now.st_mode) || S_ISDIR(now.st_mode)) {
      ::close(fd);  // swapped for a file since: never written in place
      continue;
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    f.fd_.reset(fd);
    return f;
  }
  return bad("it kept changing while perf-monitor opened it");
}

Status OutputFile::commit() {
  if (temp_.empty()) return {};
  auto kept = [&](const std::string& why) {
    temp_.clear();  // kept, not removed: the data is there
    return make_error(Errc::kIo, path_ + " was not replaced (" + why + "): the output is in " + temp_path_);
  };
  struct stat st {};
  if (::fstatat(dir_.get(), base_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid != ::geteuid()) {
    return kept("another user (uid " + std::to_string(st.st_uid) + ") put something there meanwhile");
  }
  if (::renameat(dir_.get(), temp_.c_str(), dir_.get(), base_.c_str()) != 0) return kept(std::strerror(errno));
  temp_.clear();
  return {};
}

}  // namespace pm
