// SPDX-License-Identifier: Apache-2.0
#include "sources/probes/uprobe_multi.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace pm::probes {
namespace {

constexpr int kBpfLinkCreate = 28;           // BPF_LINK_CREATE
constexpr uint32_t kUprobeMultiReturn = 1;  // BPF_F_UPROBE_MULTI_RETURN

// The part of union bpf_attr that BPF_LINK_CREATE reads for a uprobe_multi link, as the
// kernel's UAPI lays it out (Linux 6.6; Debian 12's headers are older).
struct LinkCreateUprobeMulti {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;
  uint32_t flags;
  alignas(8) uint64_t path;
  uint64_t offsets;
  uint64_t ref_ctr_offsets;
  uint64_t cookies;
  uint32_t cnt;
  uint32_t multi_flags;
  uint32_t pid;
};
static_assert(offsetof(LinkCreateUprobeMulti, path) == 16 && offsetof(LinkCreateUprobeMulti, pid) == 56,
              "the layout of bpf_attr.link_create.uprobe_multi");

}  // namespace

Result<UniqueFd> attach_uprobe_multi(int prog_fd, const std::string& path, const std::vector<uint64_t>& offsets,
                                     const std::vector<uint64_t>& cookies, bool retprobe, const std::string& shown) {
  if (offsets.empty() || offsets.size() != cookies.size()) {
    return make_error(Errc::kInvalidArgument, "uprobe_multi: one cookie per offset");
  }
  LinkCreateUprobeMulti attr;
  std::memset(&attr, 0, sizeof attr);  // the padding too: the kernel refuses bytes it does not know
  attr.prog_fd = static_cast<uint32_t>(prog_fd);
  attr.attach_type = kUprobeMultiAttachType;
  attr.path = reinterpret_cast<uintptr_t>(path.c_str());
  attr.offsets = reinterpret_cast<uintptr_t>(offsets.data());
  attr.cookies = reinterpret_cast<uintptr_t>(cookies.data());
  attr.cnt = static_cast<uint32_t>(offsets.size());
  attr.multi_flags = retprobe ? kUprobeMultiReturn : 0;
  long fd = ::syscall(__NR_bpf, kBpfLinkCreate, &attr, sizeof attr);
  if (fd < 0) {
    int err = errno;
    // An older kernel does not know the attach type (EINVAL) or the link (EOPNOTSUPP).
    if (err == EINVAL || err == EOPNOTSUPP || err == ENOSYS || err == E2BIG) {
      return make_error(Errc::kUnavailable, std::string("uprobe_multi links: ") + std::strerror(err));
    }
    return Error::from_errno(err, "attaching uprobes to " + shown);
  }
  return UniqueFd(static_cast<int>(fd));
}

}  // namespace pm::probes
