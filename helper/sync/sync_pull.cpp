// The sync engine's pull: remote files (outputs, checkpoints, logs) brought into the local tree
// with the same safety rules as a push, mirrored (see docs/sync.md "Pull").
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "helper/remote/endpoint.hpp"
#include "helper/sync/sync_engine_state.hpp"
#include "protocol/delta/delta.hpp"

namespace ferry::sync {
using namespace engine_parts;

std::expected<SyncSummary, std::string> SyncEngine::pull(const std::vector<std::string>& paths_in, const SyncOptions& o) {
  const auto t0 = Clock::now();
  SyncSummary summary;
  summary.dry_run = o.dry_run;
  const fs::path& root = target_.local_root;
  std::vector<std::string> paths;
  for (auto p : paths_in) {
    while (p.starts_with("./")) p.erase(0, 2);
    while (p.size() > 1 && p.ends_with('/')) p.pop_back();
    if (p.starts_with('/') || p == ".." || p.starts_with("../") || p.find("/../") != std::string::npos || p.ends_with("/.."))
      return std::unexpected("pull: '" + p + "' must be a path inside the mapping");
    paths.push_back(p == "." ? "" : p);
  }
  if (paths.empty()) paths.push_back("");

  std::lock_guard state_lock(state_->mu);
  if (!state_->manifest) {
    auto loaded = load_manifest(manifest_path());
    if (!loaded) return std::unexpected(loaded.error());
    state_->manifest = std::move(*loaded);
  }
  Manifest* manifest = &*state_->manifest;
  manifest->remote_root = target_.remote_root;
  json known = json::array();
  for (const auto& [p, m] : manifest->entries) known.push_back(p);
  auto listed = endpoint_.call("sync/list", json{{"base", target_.remote_base}, {"known", std::move(known)}, {"hashUnder", paths}},
                               kBigCallTimeout);
  if (!listed) return std::unexpected("sync/list on " + endpoint_.description() + ": " + listed.error().message);
  const TreeState remote = from_listing(*listed);

  Progress prog;
  prog.manifest = manifest;
  prog.summary = &summary;
  prog.options = &o;
  std::vector<std::function<void()>> jobs;
  std::size_t matched_any = 0;
  for (const auto& [path, R] : remote) {
    if (std::none_of(paths.begin(), paths.end(), [&](const std::string& p) { return under(path, p); })) continue;
    if (path == ".ferry" || path.starts_with(".ferry/")) continue;
    ++matched_any;
    const fs::path dest = root / path;
    struct stat st {};
    const bool exists = ::lstat(dest.c_str(), &st) == 0;
    if (R.kind == EntryKind::dir) {
      if (exists && !S_ISDIR(st.st_mode)) {
        summary.conflicts.push_back({path, ConflictKind::kind_mismatch, "a local file where the remote has a directory"});
      } else if (!exists && !o.dry_run) {
        std::error_code ec;
        fs::create_directories(dest, ec);
        if (ec) summary.errors.push_back("mkdir '" + path + "': " + ec.message());
        else ::chmod(dest.c_str(), R.mode);
        ++summary.dirs_made;
      }
      continue;
    }
    if (R.kind == EntryKind::symlink) {
      if (exists && S_ISLNK(st.st_mode) && fs::read_symlink(dest).string() == R.link_target) continue;
      if (exists && !S_ISLNK(st.st_mode) && !o.force) {
        summary.conflicts.push_back({path, ConflictKind::kind_mismatch, "a local file where the remote has a symlink"});
        continue;
      }
      ++summary.files_sent;
      if (o.dry_run) continue;
      std::error_code ec;
      fs::create_directories(dest.parent_path(), ec);
      const fs::path tmp = dest.parent_path() / (".ferry-tmp." + dest.filename().string());
      fs::remove(tmp, ec);
      fs::create_symlink(R.link_target, tmp, ec);
      if (!ec) fs::rename(tmp, dest, ec);
      if (ec) summary.errors.push_back("symlink '" + path + "': " + ec.message());
      else manifest->record(path, R);
      continue;
    }
    // A file: compare with the local one by content.
    if (exists && S_ISDIR(st.st_mode)) {
      summary.conflicts.push_back({path, ConflictKind::kind_mismatch, "a local directory where the remote has a file"});
      continue;
    }
    std::optional<Hash128> local_hash;
    if (exists && S_ISREG(st.st_mode)) {
      if (auto bytes = read_bytes(dest)) local_hash = delta::hash128(*bytes);
    }
    if (local_hash && R.hash && *local_hash == *R.hash) {
      ++summary.unchanged;
      if (!o.dry_run) manifest->record(path, R);
      continue;
    }
    if (exists && !o.force) {
      auto m = manifest->entries.find(path);
      if (m == manifest->entries.end() || !m->second.hash || !local_hash || *m->second.hash != *local_hash) {
        summary.conflicts.push_back({path, ConflictKind::changed_remotely,
                                     "the local file differs from what ferry last synced (pull --force takes the remote's)"});
        continue;
      }
    }
    ++summary.files_sent;
    prog.total += R.size;
    if (o.dry_run) {
      summary.bytes_literal += R.size;
      continue;
    }
    jobs.push_back([&, path = path, R = R, dest] {
      std::vector<std::uint8_t> content;
      content.reserve(R.size);
      std::uint64_t wire = 0;
      for (std::uint64_t offset = 0;;) {
        auto chunk = endpoint_.call("sync/read",
                                    json{{"base", target_.remote_base}, {"path", path}, {"offset", offset}, {"length", kReadChunk}},
                                    kBigCallTimeout);
        if (!chunk) return prog.error(fmt::format("sync/read '{}': {}", path, chunk.error().message));
        const auto& data = chunk->at("data").get_binary();
        wire += data.size();
        auto raw = zstd_decompress(data.data(), data.size(), chunk->at("rawSize").get<std::uint64_t>());
        if (!raw) return prog.error(fmt::format("sync/read '{}': {}", path, raw.error()));
        content.insert(content.end(), raw->begin(), raw->end());
        offset += raw->size();
        if (chunk->value("eof", true) || raw->empty()) break;
      }
      FileMeta got = R;
      got.size = content.size();
      got.hash = delta::hash128(content);
      if (R.hash && *got.hash != *R.hash) {
        // Changed on the remote while being read: take it as it is now, it is whole.
        spdlog::info("pull: '{}' changed on the remote while being read", path);
      }
      std::error_code ec;
      fs::create_directories(dest.parent_path(), ec);
      auto written = write_file_atomically(dest, std::string_view(reinterpret_cast<const char*>(content.data()), content.size()));
      if (!written) return prog.error(fmt::format("write '{}': {}", path, written.error()));
      ::chmod(dest.c_str(), got.mode);
      timespec times[2] = {{0, UTIME_OMIT}, {static_cast<time_t>(got.mtime_ns / 1'000'000'000), static_cast<long>(got.mtime_ns % 1'000'000'000)}};
      ::utimensat(AT_FDCWD, dest.c_str(), times, AT_SYMLINK_NOFOLLOW);
      {
        std::lock_guard lock(prog.mu);
        manifest->record(path, got);
        summary.bytes_literal += content.size();
        summary.bytes_on_wire += wire;
      }
      prog.advance(content.size());
    });
  }
  for (const auto& p : paths)
    if (!p.empty() && !remote.contains(p) && matched_any == 0) summary.errors.push_back("'" + p + "' is not on the remote");
  run_parallel(jobs, o.in_flight, o.cancelled);
  summary.cancelled = o.cancelled && o.cancelled();
  if (!o.dry_run) {
    ++state_->manifest_version;
    {
      std::lock_guard lock(state_->persist_mu);
      state_->pending = true;
    }
    state_->persist_cv.notify_all();
  }
  summary.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return summary;
}

}  // namespace ferry::sync
