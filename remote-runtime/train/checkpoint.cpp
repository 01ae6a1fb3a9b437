// Checkpoint container, atomic writes and capture/restore of model, optimizer and RNG state.
#include "remote-runtime/train/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <type_traits>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <torch/nn/module.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "protocol/json_parse_core.hpp"
#include "remote-runtime/train/std_compat.hpp"

namespace ferry::train {
namespace {

constexpr char kMagic[] = "FERRYCKPT\n";
constexpr std::size_t kMagicLen = sizeof(kMagic) - 1;

std::string sys_error(const std::string& what, const std::filesystem::path& p) {
  return what + " " + p.string() + ": " + std::strerror(errno);
}

Expected<void, std::string> write_all(int fd, const void* data, std::size_t n, const std::filesystem::path& p) {
  const auto* bytes = static_cast<const char*>(data);
  while (n > 0) {
    const auto w = ::write(fd, bytes, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Unexpected(sys_error("write", p));
    }
    bytes += w;
    n -= static_cast<std::size_t>(w);
  }
  return {};
}

// The optimizer state map is keyed by a string of the TensorImpl address in 1.13 and by the address
// itself in 2.x; derive the key type from the map instead of testing versions.
template <typename Map>
typename Map::key_type state_key(const torch::Tensor& p) {
  if constexpr (std::is_same_v<typename Map::key_type, std::string>) {
    std::ostringstream key;  // what c10::guts::to_string did in 1.13
    key << static_cast<const void*>(p.unsafeGetTensorImpl());
    return key.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

std::string param_key(const std::string& name, const char* field) { return "optim/" + name + "/" + field; }

}  // namespace

const torch::Tensor* CheckpointData::find(const std::string& name) const {
  for (const auto& [n, t] : tensors) {
    if (n == name) return &t;
  }
  return nullptr;
}

Expected<void, std::string> write_checkpoint(const std::filesystem::path& file, const CheckpointData& data) {
  nlohmann::json header;
  header["format"] = "ferry-checkpoint";
  header["version"] = kCheckpointFormatVersion;
  header["meta"] = data.meta;
  std::vector<torch::Tensor> cpu;
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : data.tensors) {
    auto t = tensor.detach().to(torch::kCPU).contiguous();
    const auto nbytes = static_cast<std::uint64_t>(t.numel()) * t.element_size();
    header["tensors"].push_back({{"name", name},
                                 {"dtype", static_cast<int>(t.scalar_type())},
                                 {"dtype_name", std::string(c10::toString(t.scalar_type()))},
                                 {"shape", t.sizes().vec()},
                                 {"offset", offset},
                                 {"nbytes", nbytes}});
    offset += nbytes;
    cpu.push_back(std::move(t));
  }
  const auto text = header.dump();
  const std::uint64_t header_len = text.size();

  const auto dir = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Unexpected("create " + dir.string() + ": " + ec.message());
  // Built with append: GCC 12 warns falsely (-Wrestrict, PR105329) on "." + std::string.
  std::string tmp_name(".");
  tmp_name.append(file.filename().string()).append(".tmp").append(std::to_string(::getpid()));
  const auto tmp = dir / tmp_name;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Unexpected(sys_error("open", tmp));
  auto fail = [&](std::string message) -> Expected<void, std::string> {
    ::close(fd);
    ::unlink(tmp.c_str());
    return Unexpected(std::move(message));
  };
  unsigned char len_le[8];
  for (int i = 0; i < 8; ++i) len_le[i] = static_cast<unsigned char>(header_len >> (8 * i));
  if (auto r = write_all(fd, kMagic, kMagicLen, tmp); !r) return fail(r.error());
  if (auto r = write_all(fd, len_le, 8, tmp); !r) return fail(r.error());
  if (auto r = write_all(fd, text.data(), text.size(), tmp); !r) return fail(r.error());
  for (const auto& t : cpu) {
    if (auto r = write_all(fd, t.data_ptr(), static_cast<std::size_t>(t.numel()) * t.element_size(), tmp); !r) {
      return fail(r.error());
    }
  }
  if (::fsync(fd) != 0) return fail(sys_error("fsync", tmp));
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return Unexpected(sys_error("close", tmp));
  }
  if (::rename(tmp.c_str(), file.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Unexpected(sys_error("rename", file));
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

Expected<CheckpointData, std::string> read_checkpoint(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Unexpected("cannot open checkpoint " + file.string());
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  char magic[kMagicLen];
  unsigned char len_le[8];
  if (!in.read(magic, kMagicLen) || std::memcmp(magic, kMagic, kMagicLen) != 0) {
    return Unexpected(file.string() + ": not a ferry checkpoint");
  }
  if (!in.read(reinterpret_cast<char*>(len_le), 8)) return Unexpected(file.string() + ": truncated header");
  std::uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= static_cast<std::uint64_t>(len_le[i]) << (8 * i);
  const auto data_start = kMagicLen + 8 + header_len;
  if (header_len > file_size || data_start > file_size) return Unexpected(file.string() + ": truncated header");
  std::string text(header_len, '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_len));
  nlohmann::json header;  // stays null when the text is not JSON
  protocol::parse_json_into(text, header);
  if (!header.is_object() || header.value("format", "") != "ferry-checkpoint") {
    return Unexpected(file.string() + ": bad checkpoint header");
  }
  if (header.value("version", 0) != kCheckpointFormatVersion) {
    return Unexpected(file.string() + ": unsupported checkpoint version " + header["version"].dump());
  }
  CheckpointData data;
  data.meta = header.value("meta", nlohmann::json::object());
  if (!header.contains("tensors")) return data;
  for (const auto& entry : header["tensors"]) {
    try {
      const auto name = entry.at("name").get<std::string>();
      const auto dtype = static_cast<c10::ScalarType>(entry.at("dtype").get<int>());
      const auto shape = entry.at("shape").get<std::vector<std::int64_t>>();
      const auto offset = entry.at("offset").get<std::uint64_t>();
      const auto nbytes = entry.at("nbytes").get<std::uint64_t>();
      auto t = torch::empty(shape, torch::TensorOptions().dtype(dtype));
      if (static_cast<std::uint64_t>(t.numel()) * t.element_size() != nbytes ||
          data_start + offset + nbytes > file_size) {
        return Unexpected(file.string() + ": tensor " + name + " has inconsistent size");
      }
      in.seekg(static_cast<std::streamoff>(data_start + offset));
      if (!in.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(nbytes))) {
        return Unexpected(file.string() + ": truncated tensor " + name);
      }
      data.tensors.emplace_back(name, std::move(t));
    } catch (const std::exception& e) {
      return Unexpected(file.string() + ": bad tensor entry: " + e.what());
    }
  }
  return data;
}

std::filesystem::path checkpoint_path(const std::filesystem::path& dir, std::int64_t step) {
  char name[64];
  std::snprintf(name, sizeof(name), "ckpt-%010lld.ferry", static_cast<long long>(step));
  return dir / name;
}

std::vector<std::filesystem::path> list_checkpoints(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const auto name = entry.path().filename().string();
    if (starts_with(name, "ckpt-") && ends_with(name, ".ferry")) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());  // zero-padded step numbers sort by step
  return out;
}

void prune_checkpoints(const std::filesystem::path& dir, int keep_last) {
  auto all = list_checkpoints(dir);
  if (keep_last <= 0 || static_cast<int>(all.size()) <= keep_last) return;
  for (std::size_t i = 0; i + static_cast<std::size_t>(keep_last) < all.size(); ++i) {
    std::error_code ec;
    std::filesystem::remove(all[i], ec);
  }
}

void add_model_state(CheckpointData& data, const torch::nn::Module& model) {
  for (const auto& item : model.named_parameters()) data.tensors.emplace_back("model/" + item.key(), item.value());
  for (const auto& item : model.named_buffers()) data.tensors.emplace_back("model/" + item.key(), item.value());
}

Expected<void, std::string> load_model_state(const CheckpointData& data, torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  auto load = [&](const std::string& name, torch::Tensor& target) -> Expected<void, std::string> {
    const auto* t = data.find("model/" + name);
    if (!t) return Unexpected("checkpoint lacks model/" + name);
    if (t->sizes() != target.sizes()) return Unexpected("checkpoint shape mismatch for model/" + name);
    target.copy_(*t);
    return {};
  };
  for (auto& item : model.named_parameters()) {
    if (auto r = load(item.key(), item.value()); !r) return r;
  }
  for (auto& item : model.named_buffers()) {
    if (auto r = load(item.key(), item.value()); !r) return r;
  }
  return {};
}

void add_optimizer_state(CheckpointData& data, torch::optim::Optimizer& optimizer, const torch::nn::Module& model) {
  auto& state = optimizer.state();
  using Map = std::remove_cv_t<std::remove_reference_t<decltype(state)>>;
  nlohmann::json params = nlohmann::json::object();
  for (const auto& item : model.named_parameters()) {
    const auto it = state.find(state_key<Map>(item.value()));
    if (it == state.end()) continue;
    nlohmann::json entry;
    if (auto* s = dynamic_cast<torch::optim::AdamWParamState*>(it->second.get())) {
      entry["step"] = s->step();
      data.tensors.emplace_back(param_key(item.key(), "exp_avg"), s->exp_avg());
      data.tensors.emplace_back(param_key(item.key(), "exp_avg_sq"), s->exp_avg_sq());
      if (s->max_exp_avg_sq().defined()) data.tensors.emplace_back(param_key(item.key(), "max_exp_avg_sq"), s->max_exp_avg_sq());
    } else if (auto* a = dynamic_cast<torch::optim::AdamParamState*>(it->second.get())) {
      entry["step"] = a->step();
      data.tensors.emplace_back(param_key(item.key(), "exp_avg"), a->exp_avg());
      data.tensors.emplace_back(param_key(item.key(), "exp_avg_sq"), a->exp_avg_sq());
      if (a->max_exp_avg_sq().defined()) data.tensors.emplace_back(param_key(item.key(), "max_exp_avg_sq"), a->max_exp_avg_sq());
    } else if (auto* g = dynamic_cast<torch::optim::SGDParamState*>(it->second.get())) {
      if (g->momentum_buffer().defined()) data.tensors.emplace_back(param_key(item.key(), "momentum_buffer"), g->momentum_buffer());
    }
    params[item.key()] = entry;
  }
  nlohmann::json groups = nlohmann::json::array();
  for (auto& group : optimizer.param_groups()) groups.push_back({{"lr", group.options().get_lr()}});
  data.meta["optimizer"] = {{"params", params}, {"groups", groups}};
}

Expected<void, std::string> load_optimizer_state(const CheckpointData& data, torch::optim::Optimizer& optimizer,
                                                      const torch::nn::Module& model) {
  if (!data.meta.contains("optimizer")) return Unexpected("checkpoint lacks optimizer state");
  const auto& meta = data.meta["optimizer"];
  auto& state = optimizer.state();
  using Map = std::remove_cv_t<std::remove_reference_t<decltype(state)>>;
  auto tensor = [&](const std::string& name, const char* field) -> torch::Tensor {
    const auto* t = data.find(param_key(name, field));
    if (!t) return {};
    auto ref = model.named_parameters()[name];
    return t->to(ref.device()).clone();
  };
  const auto& params = meta.value("params", nlohmann::json::object());
  const bool is_adamw = dynamic_cast<torch::optim::AdamW*>(&optimizer) != nullptr;
  const bool is_adam = dynamic_cast<torch::optim::Adam*>(&optimizer) != nullptr;
  for (const auto& item : model.named_parameters()) {
    if (!params.contains(item.key())) continue;
    const auto& entry = params[item.key()];
    const auto key = state_key<Map>(item.value());
    if (is_adamw || is_adam) {
      auto exp_avg = tensor(item.key(), "exp_avg");
      auto exp_avg_sq = tensor(item.key(), "exp_avg_sq");
      if (!exp_avg.defined() || !exp_avg_sq.defined()) return Unexpected("checkpoint lacks Adam moments of " + item.key());
      const auto step = entry.value("step", std::int64_t{0});
      // Adam and AdamW keep the same moments under different state types.
      auto restore_moments = [&](auto s) {
        s->step(step);
        s->exp_avg(exp_avg);
        s->exp_avg_sq(exp_avg_sq);
        if (auto m = tensor(item.key(), "max_exp_avg_sq"); m.defined()) s->max_exp_avg_sq(m);
        state[key] = std::move(s);
      };
      if (is_adamw)
        restore_moments(std::make_unique<torch::optim::AdamWParamState>());
      else
        restore_moments(std::make_unique<torch::optim::AdamParamState>());
    } else {
      auto s = std::make_unique<torch::optim::SGDParamState>();
      if (auto m = tensor(item.key(), "momentum_buffer"); m.defined()) s->momentum_buffer(m);
      state[key] = std::move(s);
    }
  }
  const auto& groups = meta.value("groups", nlohmann::json::array());
  for (std::size_t i = 0; i < groups.size() && i < optimizer.param_groups().size(); ++i) {
    optimizer.param_groups()[i].options().set_lr(groups[i].value("lr", optimizer.param_groups()[i].options().get_lr()));
  }
  return {};
}

void add_rng_state(CheckpointData& data, int cuda_device) {
  auto cpu = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    data.tensors.emplace_back("rng/cpu", cpu.get_state());
  }
  if (cuda_device >= 0) {
    auto gen = at::globalContext().defaultGenerator(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(cuda_device)));
    std::lock_guard<std::mutex> lock(gen.mutex());
    data.tensors.emplace_back("rng/cuda", gen.get_state());
  }
}

Expected<void, std::string> load_rng_state(const CheckpointData& data, int cuda_device) {
  const auto* cpu_state = data.find("rng/cpu");
  if (!cpu_state) return Unexpected("checkpoint lacks rng/cpu");
  auto cpu = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    cpu.set_state(*cpu_state);
  }
  if (cuda_device >= 0) {
    if (const auto* cuda_state = data.find("rng/cuda")) {
      auto gen = at::globalContext().defaultGenerator(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(cuda_device)));
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(*cuda_state);
    }
  }
  return {};
}

std::string parameter_hash(const torch::nn::Module& model) {
  std::map<std::string, torch::Tensor> sorted;
  for (const auto& item : model.named_parameters()) sorted.emplace(item.key(), item.value());
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const auto& [name, p] : sorted) {
    auto t = p.detach().to(torch::kCPU).contiguous();
    const auto* bytes = static_cast<const unsigned char*>(t.data_ptr());
    const auto n = static_cast<std::size_t>(t.numel()) * t.element_size();
    for (std::size_t i = 0; i < n; ++i) {
      h ^= bytes[i];
      h *= 0x100000001b3ULL;
    }
  }
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(h));
  return out;
}

}  // namespace ferry::train
