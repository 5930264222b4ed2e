// SPDX-License-Identifier: Apache-2.0
#include "sources/kernel/block_source.h"

#include <linux/types.h>

#include <map>
#include <string>

#include <fmt/format.h>

#include "core/file_reader.h"
#include "core/text.h"
#include "core/text_layout.h"

// clang-format off
#include "block.h"
#include "block.skel.h"
// clang-format on

namespace pm {
namespace {

using K = MetricKind;
constexpr const char* kOps[2] = {"read", "write"};

void block_text(TextBlock& b);
void tree_block_text(TextBlock& b);

// Per device and op; device="all" is every disk together (the original design's totals).
const MetricDesc kBioBytes = shown_by(
    block_text, {"block_io", "bio_bytes", K::kCounter, Unit::kBytes, "Bytes of bios submitted, per device and op"});
const MetricDesc kBios =
    shown_by(block_text, {"block_io", "bios", K::kCounter, Unit::kNone, "Bios submitted, per device and op"});
const MetricDesc kRequests =
    shown_by(block_text, {"block_io", "requests", K::kCounter, Unit::kNone, "Requests issued to the device driver"});
const MetricDesc kLatency = shown_by(block_text, {"block_io",
                                                  "request_latency_seconds",
                                                  K::kHistogram,
                                                  Unit::kSeconds,
                                                  "Request latency from issue to completion",
                                                  {},
                                                  1e-6});
const MetricDesc kDepth =
    shown_by(block_text, {"block_io",
                          "queue_depth",
                          K::kHistogram,
                          Unit::kNone,
                          "Requests in flight on the device when a request is issued (itself included)",
                          {},
                          1.0});

const MetricDesc kTreeRead =
    shown_by(tree_block_text, {"process_tree", "bio_read_bytes", K::kCounter, Unit::kBytes,
                               "Bytes of read bios the tree submitted (block layer)", "proc_bio_read_bytes"});
const MetricDesc kTreeWrite =
    shown_by(tree_block_text, {"process_tree", "bio_write_bytes", K::kCounter, Unit::kBytes,
                               "Bytes of write bios the tree submitted (block layer)", "proc_bio_write_bytes"});

// block    vda: read 1.7 MiB/s  write 79.4 MiB/s  40 bios/s  334 requests/s  latency p50 < 512 us  p99 < 4.1 ms
//               queue depth p99 < 256
//          (all disks together when there are several)
void block_text(TextBlock& b) {
  int at = text_order::kBlock;
  std::vector<const Shown*> devices = b.take_all(kRequests);
  size_t disks = 0;
  for (const Shown* r : devices) disks += label_of(*r, "device") != kAllLabel ? 1 : 0;
  for (const Shown* req : devices) {
    std::string dev(label_of(*req, "device"));
    Labels want{{"device", dev}};
    const Shown* rd = b.take(kBioBytes, {{"device", dev}, {"op", "read"}});
    const Shown* wr = b.take(kBioBytes, {{"device", dev}, {"op", "write"}});
    const Shown* rbios = b.take(kBios, {{"device", dev}, {"op", "read"}});
    const Shown* wbios = b.take(kBios, {{"device", dev}, {"op", "write"}});
    const Shown* lat = b.take(kLatency, want);
    const Shown* depth = b.take(kDepth, want);
    if (dev == kAllLabel && disks < 2) continue;  // one disk: its own line says it all
    std::string s = fmt::format("{}: read {}  write {}", dev, rd != nullptr ? counted(b, *rd, true) : "n/a",
                                wr != nullptr ? counted(b, *wr, true) : "n/a");
    if (rbios != nullptr && wbios != nullptr) {
      double n = b.summary() ? rbios->value + wbios->value : rbios->rate + wbios->rate;
      s += fmt::format("  {} bios{}", human_count(n), b.summary() ? "" : "/s");
    }
    s += fmt::format("  {} requests{}", human_count(b.summary() ? req->value : req->rate), b.summary() ? "" : "/s");
    if (lat != nullptr) s += fmt::format("  latency p50 {}  p99 {}", below_time(lat->p50), below_time(lat->p99));
    if (depth != nullptr) {
      s += "  queue depth p99 " + (std::isfinite(depth->p99) ? fmt::format("< {:.0f}", depth->p99) : std::string("-"));
    }
    b.line(at++, "block", s);
  }
}

// The tree's bios, with the tree's figures (its storage I/O as the block layer saw it submitted).
void tree_block_text(TextBlock& b) {
  const Shown* rd = b.take(kTreeRead);
  const Shown* wr = b.take(kTreeWrite);
  if (rd == nullptr || wr == nullptr || !b.summary()) return;  // intervals: the storage figures are enough
  b.line(text_order::kTree + 14, "tree",
         fmt::format("{:<8} submitted by its tasks: read {}  written {} (the kernel's writeback is not theirs)",
                     "bios", human_bytes(rd->value), human_bytes(wr->value)));
}

// Whole disks by device number (major << 20 | minor, as the kernel side keys them).
std::map<__u32, std::string> disk_names() {
  std::map<__u32, std::string> names;
  FileReader reader;
  auto disks = list_dir("/sys/block");
  if (!disks) return names;
  for (const std::string& d : *disks) {
    // An unused loop or zram device has size 0: nothing to show.
    auto size = reader.read("/sys/block/" + d + "/size");
    if (size && trim(*size) == "0") continue;
    auto text = reader.read("/sys/block/" + d + "/dev");
    if (!text) continue;
    std::string_view t = trim(*text);
    size_t colon = t.find(':');
    auto major = parse_u64(t.substr(0, colon));
    auto minor = colon == std::string_view::npos ? std::nullopt : parse_u64(t.substr(colon + 1));
    if (major && minor) names[static_cast<__u32>(*major << 20 | *minor)] = d;
  }
  return names;
}

void add_stats(pm_dev_stats& sum, const pm_dev_stats& c) {
  for (int op = 0; op < 2; ++op) {
    sum.bio_bytes[op] += c.bio_bytes[op];
    sum.bios[op] += c.bios[op];
  }
  sum.requests += c.requests;
  sum.lat_count += c.lat_count;
  sum.lat_ns += c.lat_ns;
  for (int i = 0; i < PM_LAT_BUCKETS; ++i) sum.lat_hist[i] += c.lat_hist[i];
  for (int i = 0; i < PM_QD_BUCKETS; ++i) sum.qd_hist[i] += c.qd_hist[i];
  sum.qd_sum += c.qd_sum;
}

// One device's series (or every disk's together: device="all").
void add_device(Samples& out, const MetricDesc& latency, const std::string& dev, const pm_dev_stats& s) {
  for (int op = 0; op < 2; ++op) {
    out.push_back({&kBioBytes, {{"device", dev}, {"op", kOps[op]}}, static_cast<double>(s.bio_bytes[op])});
    out.push_back({&kBios, {{"device", dev}, {"op", kOps[op]}}, static_cast<double>(s.bios[op])});
  }
  out.push_back({&kRequests, {{"device", dev}}, static_cast<double>(s.requests)});
  out.push_back({&latency,
                 {{"device", dev}},
                 static_cast<double>(s.lat_ns) / 1e9,
                 std::vector<uint64_t>(std::begin(s.lat_hist), std::end(s.lat_hist))});
  out.push_back({&kDepth,
                 {{"device", dev}},
                 static_cast<double>(s.qd_sum),
                 std::vector<uint64_t>(std::begin(s.qd_hist), std::end(s.qd_hist))});
}

}  // namespace

struct BlockSource::Impl {
  MetricDesc latency = kLatency;  // in the configured unit
  SkeletonPtr<block_bpf> skel{nullptr, block_bpf::destroy};
  bool track_tree = false;
  std::map<__u32, std::string> names = disk_names();
  std::vector<pm_tree_io> tree;
  std::vector<pm_dev_stats> per_cpu;  // one device's slots, one per possible CPU
};

BlockSource::BlockSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BlockSource::~BlockSource() = default;

Result<std::unique_ptr<BlockSource>> make_block_source(const BpfLoadOptions& target) {
  auto impl = std::make_unique<BlockSource::Impl>();
  impl->latency.bucket_base = static_cast<double>(target.hist_unit_ns) * 1e-9;
  auto loaded = load_skeleton<block_bpf>("block I/O", target);
  if (!loaded) return loaded.error();
  impl->skel = std::move(loaded->skel);
  impl->track_tree = loaded->tree;  // the raw_tp fallback cannot follow a tree
  return std::make_unique<BlockSource>(std::move(impl));
}

void BlockSource::collect(Samples& out) {
  Impl& m = *impl_;
  int fd = bpf_map__fd(m.skel->maps.devices);
  m.per_cpu.resize(static_cast<size_t>(libbpf_num_possible_cpus()));
  // Every disk is reported from the start, with zeros until its first I/O: a series that
  // appeared with its first I/O already counted would lose that I/O from the run's total.
  std::map<__u32, pm_dev_stats> stats;
  for (const auto& [dev, name] : m.names) stats[dev] = pm_dev_stats{};
  __u32 key = 0, next = 0;
  const __u32* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    if (bpf_map_lookup_elem(fd, &key, m.per_cpu.data()) != 0) continue;
    pm_dev_stats& sum = stats[key];
    sum = pm_dev_stats{};
    for (const pm_dev_stats& c : m.per_cpu) add_stats(sum, c);
  }
  pm_dev_stats all{};
  for (const auto& [devno, s] : stats) {
    if (m.names.count(devno) == 0) m.names = disk_names();  // a disk that appeared since
    auto it = m.names.find(devno);
    std::string dev =
        it != m.names.end() ? it->second : std::to_string(devno >> 20) + ":" + std::to_string(devno & 0xfffff);
    add_device(out, m.latency, dev, s);
    add_stats(all, s);
  }
  add_device(out, m.latency, std::string(kAllLabel), all);
  append_bpf_stats(m.skel->obj, out);

  if (!m.track_tree || !read_per_cpu(bpf_map__fd(m.skel->maps.tree_io), m.tree)) return;
  double read = 0, write = 0;
  for (const pm_tree_io& t : m.tree) {
    read += static_cast<double>(t.bio_bytes[0]);
    write += static_cast<double>(t.bio_bytes[1]);
  }
  out.push_back({&kTreeRead, {}, read});
  out.push_back({&kTreeWrite, {}, write});
}

}  // namespace pm
