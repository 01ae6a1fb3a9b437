// Training config validation: JSON -> TrainConfig, every bad field reported with its JSON pointer.
// The rules here and protocol/spec/train-config.schema.json must agree (tests/unit/train checks both).
#include "remote-runtime/train/train_config.hpp"

#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include "protocol/json_parse_core.hpp"
#include "remote-runtime/train/memory_size.hpp"
#include "remote-runtime/train/std_compat.hpp"

namespace ferry::train {
namespace {

using nlohmann::json;

// Thrown only inside this file and turned into std::expected at the public boundary: the parser
// is a deep tree of field reads and an early exit from any of them is the whole point.
struct ConfigFailure {
  ConfigError error;
};

[[noreturn]] void fail(std::string pointer, std::string message) {
  throw ConfigFailure{ConfigError{std::move(pointer), std::move(message)}};
}

std::string escape_pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

// JSON Schema counts 3.0 as an integer; so do we, to agree with it.
std::optional<std::int64_t> as_integer(const json& v) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return std::nullopt;
    }
    return v.get<std::int64_t>();
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e18) {
      return static_cast<std::int64_t>(d);
    }
  }
  return std::nullopt;
}

// Reads one JSON object, remembering which keys were consumed so unknown ones can be rejected.
class ObjectReader {
 public:
  ObjectReader(const json& object, std::string pointer) : object_(object), pointer_(std::move(pointer)) {
    if (!object_.is_object()) {
      fail(pointer_, "expected an object");
    }
  }

  std::string pointer_of(std::string_view key) const { return pointer_ + "/" + escape_pointer_token(key); }
  const std::string& pointer() const { return pointer_; }

  bool has(std::string_view key) const { return object_.contains(std::string(key)); }

  const json* find(std::string_view key) {
    const std::string k(key);
    known_.insert(k);
    auto it = object_.find(k);
    return it == object_.end() ? nullptr : &*it;
  }

  void integer(std::string_view key, std::int64_t& out, std::int64_t min, std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
    const json* v = find(key);
    if (v == nullptr) return;
    auto i = as_integer(*v);
    if (!i || *i < min || *i > max) {
      std::string range = "an integer >= " + std::to_string(min);
      if (max != std::numeric_limits<std::int64_t>::max()) range += " and <= " + std::to_string(max);
      fail(pointer_of(key), "expected " + range);
    }
    out = *i;
  }

  void integer(std::string_view key, int& out, std::int64_t min, std::int64_t max = std::numeric_limits<int>::max()) {
    std::int64_t wide = out;
    integer(key, wide, min, max);
    out = static_cast<int>(wide);
  }

  void unsigned_integer(std::string_view key, std::uint64_t& out) {
    const json* v = find(key);
    if (v == nullptr) return;
    if (v->is_number_unsigned()) {
      out = v->get<std::uint64_t>();
      return;
    }
    auto i = as_integer(*v);
    if (!i || *i < 0) fail(pointer_of(key), "expected a non-negative integer");
    out = static_cast<std::uint64_t>(*i);
  }

  // exclusive_min: the bound itself is rejected (lr > 0); otherwise it is allowed (>= 0).
  void number(std::string_view key, double& out, double min, bool exclusive_min, double max = std::numeric_limits<double>::infinity(),
              bool exclusive_max = false) {
    const json* v = find(key);
    if (v == nullptr) return;
    if (!v->is_number()) fail(pointer_of(key), "expected a number");
    const double d = v->get<double>();
    const bool low_ok = exclusive_min ? d > min : d >= min;
    const bool high_ok = exclusive_max ? d < max : d <= max;
    if (!std::isfinite(d) || !low_ok || !high_ok) {
      std::ostringstream msg;
      msg << "expected a number " << (exclusive_min ? "> " : ">= ") << min;
      if (std::isfinite(max)) msg << " and " << (exclusive_max ? "< " : "<= ") << max;
      fail(pointer_of(key), msg.str());
    }
    out = d;
  }

  void boolean(std::string_view key, bool& out) {
    const json* v = find(key);
    if (v == nullptr) return;
    if (!v->is_boolean()) fail(pointer_of(key), "expected true or false");
    out = v->get<bool>();
  }

  void string(std::string_view key, std::string& out, bool allow_empty) {
    const json* v = find(key);
    if (v == nullptr) return;
    if (!v->is_string()) fail(pointer_of(key), "expected a string");
    if (!allow_empty && v->get_ref<const std::string&>().empty()) fail(pointer_of(key), "expected a non-empty string");
    out = v->get<std::string>();
  }

  template <typename Enum, std::size_t N>
  void enumeration(std::string_view key, Enum& out, const std::pair<const char*, Enum> (&names)[N]) {
    const json* v = find(key);
    if (v == nullptr) return;
    std::string allowed;
    for (const auto& [name, value] : names) {
      if (v->is_string() && v->get_ref<const std::string&>() == name) {
        out = value;
        return;
      }
      allowed += allowed.empty() ? "" : ", ";
      allowed += std::string("\"") + name + "\"";
    }
    fail(pointer_of(key), "expected one of " + allowed);
  }

  void reject_unknown() const {
    for (const auto& [key, value] : object_.items()) {
      if (known_.count(key) == 0) fail(pointer_of(key), "unknown key \"" + key + "\"");
    }
  }

 private:
  const json& object_;
  std::string pointer_;
  std::set<std::string> known_;
};

constexpr std::pair<const char*, ModelKind> kModelKinds[] = {
    {"mlp", ModelKind::mlp}, {"cnn", ModelKind::cnn}, {"transformer", ModelKind::transformer}};
constexpr std::pair<const char*, Task> kTasks[] = {
    {"classification", Task::classification}, {"regression", Task::regression}, {"language_model", Task::language_model}};
constexpr std::pair<const char*, DataSource> kSources[] = {
    {"synthetic", DataSource::synthetic}, {"mnist", DataSource::mnist}, {"tensor", DataSource::tensor}};
constexpr std::pair<const char*, OptimizerKind> kOptimizers[] = {
    {"sgd", OptimizerKind::sgd}, {"adam", OptimizerKind::adam}, {"adamw", OptimizerKind::adamw}};
constexpr std::pair<const char*, ScheduleKind> kSchedules[] = {
    {"constant", ScheduleKind::constant}, {"step", ScheduleKind::step}, {"cosine", ScheduleKind::cosine}};
constexpr std::pair<const char*, Precision> kPrecisions[] = {
    {"fp32", Precision::fp32}, {"bf16", Precision::bf16}, {"fp16", Precision::fp16}};

template <typename Enum, std::size_t N>
const char* name_of(Enum value, const std::pair<const char*, Enum> (&names)[N]) {
  for (const auto& [name, v] : names) {
    if (v == value) return name;
  }
  return "?";
}

constexpr int kMaxDim = 1 << 20;  // any single layer size beyond this is a typo, not a model

void parse_model(ObjectReader& r, ModelConfig& m) {
  r.enumeration("kind", m.kind, kModelKinds);
  r.integer("input_dim", m.input_dim, 1, kMaxDim);
  if (const json* hidden = r.find("hidden")) {
    if (!hidden->is_array()) fail(r.pointer_of("hidden"), "expected an array of layer widths");
    if (hidden->size() > 64) fail(r.pointer_of("hidden"), "expected at most 64 hidden layers");
    m.hidden.clear();
    for (std::size_t i = 0; i < hidden->size(); ++i) {
      auto w = as_integer((*hidden)[i]);
      if (!w || *w < 1 || *w > kMaxDim) {
        fail(r.pointer_of("hidden") + "/" + std::to_string(i), "expected an integer >= 1 and <= " + std::to_string(kMaxDim));
      }
      m.hidden.push_back(static_cast<int>(*w));
    }
  }
  r.integer("output_dim", m.output_dim, 1, kMaxDim);
  r.integer("in_channels", m.in_channels, 1, 4096);
  r.integer("image_size", m.image_size, 4, 8192);
  r.integer("width", m.width, 1, 65536);
  r.integer("blocks", m.blocks, 1, 256);
  r.integer("vocab_size", m.vocab_size, 2, kMaxDim);
  r.integer("context", m.context, 1, kMaxDim);
  r.integer("d_model", m.d_model, 1, 65536);
  r.integer("layers", m.layers, 1, 1024);
  r.integer("heads", m.heads, 1, 1024);
  r.number("dropout", m.dropout, 0.0, false, 1.0, true);
  r.reject_unknown();
  if (m.kind == ModelKind::transformer && m.d_model % m.heads != 0) {
    fail(r.pointer_of("heads"), "heads (" + std::to_string(m.heads) + ") must divide d_model (" + std::to_string(m.d_model) + ")");
  }
}

void parse_data(ObjectReader& r, DataConfig& d) {
  r.enumeration("source", d.source, kSources);
  r.enumeration("task", d.task, kTasks);
  r.integer("samples", d.samples, 1);
  r.unsigned_integer("seed", d.seed);
  r.string("path", d.path, false);
  r.string("labels_path", d.labels_path, false);
  r.number("eval_fraction", d.eval_fraction, 0.0, false, 1.0, true);
  r.integer("workers", d.workers, 0, 256);
  r.integer("prefetch", d.prefetch, 1, 1024);
  r.boolean("shuffle", d.shuffle);
  r.reject_unknown();
  if (d.source == DataSource::mnist && !r.has("path")) fail(r.pointer_of("path"), "the mnist source needs \"path\": the directory holding the IDX files");
  if (d.source == DataSource::tensor && !r.has("path")) fail(r.pointer_of("path"), "the tensor source needs \"path\": the .ftensor inputs file");
  if (d.source == DataSource::tensor && d.task != Task::language_model && !r.has("labels_path")) {
    fail(r.pointer_of("labels_path"), "the tensor source needs \"labels_path\": the .ftensor targets file");
  }
  if (d.source == DataSource::mnist && d.task != Task::classification) fail(r.pointer_of("task"), "mnist is a classification dataset");
}

void parse_optimizer(ObjectReader& r, OptimizerConfig& o) {
  r.enumeration("kind", o.kind, kOptimizers);
  r.number("lr", o.lr, 0.0, true, 10.0, false);
  r.number("momentum", o.momentum, 0.0, false, 1.0, true);
  const bool decay_given = r.has("weight_decay");
  r.number("weight_decay", o.weight_decay, 0.0, false, 1.0, false);
  r.number("beta1", o.beta1, 0.0, false, 1.0, true);
  r.number("beta2", o.beta2, 0.0, false, 1.0, true);
  r.number("eps", o.eps, 0.0, true, 1.0, false);
  r.boolean("nesterov", o.nesterov);
  r.reject_unknown();
  if (o.kind == OptimizerKind::adamw && !decay_given) o.weight_decay = 0.01;
  if (o.nesterov && o.kind != OptimizerKind::sgd) fail(r.pointer_of("nesterov"), "nesterov applies to the sgd optimizer only");
  if (o.nesterov && o.momentum <= 0.0) fail(r.pointer_of("nesterov"), "nesterov needs momentum > 0");
}

void parse_schedule(ObjectReader& r, ScheduleConfig& s) {
  r.enumeration("kind", s.kind, kSchedules);
  r.integer("warmup_steps", s.warmup_steps, 0);
  r.integer("step_size", s.step_size, 1);
  r.number("gamma", s.gamma, 0.0, true, 1.0, false);
  r.number("min_lr", s.min_lr, 0.0, false);
  r.reject_unknown();
}

void parse_auto_batch(ObjectReader& r, BatchSizeConfig& b) {
  r.integer("max", b.max, 1, 1 << 24);
  r.number("memory_fraction", b.memory_fraction, 0.0, true, 1.0, false);
  if (const json* limit = r.find("cpu_memory_limit")) {
    if (auto bytes = as_integer(*limit)) {
      if (*bytes < 1) fail(r.pointer_of("cpu_memory_limit"), "expected a positive number of bytes");
      b.cpu_memory_limit_bytes = *bytes;
    } else if (limit->is_string()) {
      auto bytes_or = parse_memory_size(limit->get_ref<const std::string&>());
      if (!bytes_or) fail(r.pointer_of("cpu_memory_limit"), bytes_or.error());
      b.cpu_memory_limit_bytes = *bytes_or;
    } else {
      fail(r.pointer_of("cpu_memory_limit"), "expected bytes (an integer) or a size such as \"4GiB\"");
    }
  }
  r.reject_unknown();
}

void parse_eval(ObjectReader& r, EvalConfig& e) {
  r.integer("every_steps", e.every_steps, 0);
  r.integer("early_stopping_patience", e.early_stopping_patience, 0, 1 << 20);
  r.number("min_delta", e.min_delta, 0.0, false);
  r.reject_unknown();
  if (e.early_stopping_patience > 0 && e.every_steps == 0) {
    fail(r.pointer_of("early_stopping_patience"), "early stopping needs periodic evaluation (eval.every_steps > 0)");
  }
}

void parse_checkpoint(ObjectReader& r, CheckpointConfig& c) {
  r.string("dir", c.dir, false);
  r.integer("every_steps", c.every_steps, 0);
  r.integer("keep_last", c.keep_last, 1, 1 << 20);
  r.reject_unknown();
}

bool is_env_name(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

void parse_on_complete(ObjectReader& r, OnCompleteConfig& o) {
  std::string value;
  if (r.has("command")) {
    r.string("command", value, false);
    o.command = value;
  }
  if (r.has("webhook_env")) {
    r.string("webhook_env", value, false);
    if (!is_env_name(value)) fail(r.pointer_of("webhook_env"), "expected an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
    o.webhook_env = value;
  }
  r.reject_unknown();
}

bool is_device(std::string_view s) {
  if (s == "auto" || s == "cpu" || s == "cuda") return true;
  if (!starts_with(s, "cuda:") || s.size() == 5 || s.size() > 8) return false;
  for (char c : s.substr(5)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Rules that tie sections together (the schema can express some, not all; see the schema's $comment).
void check_cross_fields(const TrainConfig& c) {
  const ModelConfig& m = c.model;
  const DataConfig& d = c.data;
  if (m.kind == ModelKind::transformer && d.task != Task::language_model) {
    fail("/data/task", "the transformer model is a language model: data.task must be \"language_model\"");
  }
  if (d.task == Task::language_model && m.kind != ModelKind::transformer) {
    fail("/model/kind", "language modelling needs the \"transformer\" model");
  }
  if (d.task == Task::classification && m.output_dim < 2) fail("/model/output_dim", "classification needs output_dim >= 2 (the number of classes)");
  if (d.source == DataSource::mnist) {
    if (m.kind == ModelKind::mlp && m.input_dim != 784) fail("/model/input_dim", "mnist images flatten to 784 inputs");
    if (m.kind == ModelKind::cnn && m.in_channels != 1) fail("/model/in_channels", "mnist images have 1 channel");
    if (m.kind == ModelKind::cnn && m.image_size != 28) fail("/model/image_size", "mnist images are 28x28");
    if (m.output_dim != 10) fail("/model/output_dim", "mnist has 10 classes");
  }
  if (c.schedule.kind == ScheduleKind::cosine && c.schedule.min_lr > c.optimizer.lr) {
    fail("/schedule/min_lr", "min_lr must not exceed optimizer.lr");
  }
  if (c.precision == Precision::fp16 && c.device == "cpu") {
    fail("/precision", "fp16 needs a CUDA device (use bf16 or fp32 on cpu)");
  }
  if (c.batch_size.automatic && c.device == "cpu" && !c.batch_size.cpu_memory_limit_bytes) {
    fail("/auto_batch/cpu_memory_limit", "batch_size \"auto\" on cpu needs auto_batch.cpu_memory_limit (the memory budget)");
  }
  if (c.eval.early_stopping_patience > 0 && d.eval_fraction <= 0.0) {
    fail("/data/eval_fraction", "early stopping needs held-out data (eval_fraction > 0)");
  }
}

TrainConfig parse_root(const json& doc) {
  TrainConfig c;
  ObjectReader r(doc, "");
  if (const json* schema = r.find("$schema"); schema != nullptr && !schema->is_string()) fail("/$schema", "expected a string");
  if (const json* v = r.find("model")) {
    ObjectReader sub(*v, "/model");
    parse_model(sub, c.model);
  }
  if (const json* v = r.find("data")) {
    ObjectReader sub(*v, "/data");
    parse_data(sub, c.data);
  }
  if (const json* v = r.find("optimizer")) {
    ObjectReader sub(*v, "/optimizer");
    parse_optimizer(sub, c.optimizer);
  } else {
    c.optimizer.weight_decay = 0.01;  // the default optimizer is adamw
  }
  if (const json* v = r.find("schedule")) {
    ObjectReader sub(*v, "/schedule");
    parse_schedule(sub, c.schedule);
  }
  if (r.has("epochs")) {
    std::int64_t epochs = 0;
    r.integer("epochs", epochs, 1, 1'000'000);
    c.epochs = epochs;
  }
  if (r.has("max_steps")) {
    std::int64_t steps = 0;
    r.integer("max_steps", steps, 1);
    c.max_steps = steps;
  }
  if (c.epochs && c.max_steps) fail("/max_steps", "give either epochs or max_steps, not both");
  if (!c.epochs && !c.max_steps) fail("", "one of \"epochs\" or \"max_steps\" is required");
  if (const json* v = r.find("batch_size")) {
    if (v->is_string() && v->get_ref<const std::string&>() == "auto") {
      c.batch_size.automatic = true;
    } else {
      auto b = as_integer(*v);
      if (!b || *b < 1 || *b > (1 << 24)) fail("/batch_size", "expected an integer >= 1 or \"auto\"");
      c.batch_size.value = static_cast<int>(*b);
    }
  }
  if (const json* v = r.find("auto_batch")) {
    ObjectReader sub(*v, "/auto_batch");
    parse_auto_batch(sub, c.batch_size);
  }
  r.integer("grad_accum_steps", c.grad_accum_steps, 1, 1 << 16);
  if (r.has("grad_clip_norm")) {
    double clip = 0;
    r.number("grad_clip_norm", clip, 0.0, true);
    c.grad_clip_norm = clip;
  }
  r.enumeration("precision", c.precision, kPrecisions);
  r.string("device", c.device, false);
  if (!is_device(c.device)) fail("/device", "expected \"auto\", \"cpu\", \"cuda\" or \"cuda:N\"");
  if (const json* v = r.find("eval")) {
    ObjectReader sub(*v, "/eval");
    parse_eval(sub, c.eval);
  }
  if (const json* v = r.find("checkpoint")) {
    ObjectReader sub(*v, "/checkpoint");
    parse_checkpoint(sub, c.checkpoint);
  }
  r.unsigned_integer("seed", c.seed);
  r.integer("log_every_steps", c.log_every_steps, 1);
  r.string("output_dir", c.output_dir, false);
  r.integer("threads", c.threads, 0, 4096);
  if (const json* v = r.find("on_complete")) {
    ObjectReader sub(*v, "/on_complete");
    parse_on_complete(sub, c.on_complete);
  }
  r.reject_unknown();
  check_cross_fields(c);
  return c;
}

}  // namespace

std::string ConfigError::to_string() const { return (pointer.empty() ? std::string("(root)") : pointer) + ": " + message; }

Expected<TrainConfig, ConfigError> parse_train_config(const nlohmann::json& doc) {
  try {
    return parse_root(doc);
  } catch (const ConfigFailure& f) {
    return Unexpected(f.error);
  }
}

Expected<TrainConfig, ConfigError> load_train_config(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Unexpected(ConfigError{"", "cannot open " + file.string()});
  std::ostringstream text;
  text << in.rdbuf();
  // Depth-limited (protocol/json_parse_core.hpp, header-only, packed with these sources for the
  // box): the validator and the trainer copy the document recursively.
  nlohmann::json doc;
  if (auto error = protocol::parse_json_into(text.str(), doc))
    return Unexpected(ConfigError{"", file.string() + " is not valid JSON: " + error->to_string()});
  return parse_train_config(doc);
}

nlohmann::json to_json(const TrainConfig& c) {
  json j;
  const ModelConfig& m = c.model;
  j["model"] = {{"kind", name_of(m.kind, kModelKinds)}, {"input_dim", m.input_dim},   {"hidden", m.hidden},
                {"output_dim", m.output_dim},            {"in_channels", m.in_channels}, {"image_size", m.image_size},
                {"width", m.width},                      {"blocks", m.blocks},          {"vocab_size", m.vocab_size},
                {"context", m.context},                  {"d_model", m.d_model},        {"layers", m.layers},
                {"heads", m.heads},                      {"dropout", m.dropout}};
  const DataConfig& d = c.data;
  j["data"] = {{"source", name_of(d.source, kSources)},
               {"task", name_of(d.task, kTasks)},
               {"samples", d.samples},
               {"seed", d.seed},
               {"eval_fraction", d.eval_fraction},
               {"workers", d.workers},
               {"prefetch", d.prefetch},
               {"shuffle", d.shuffle}};
  if (!d.path.empty()) j["data"]["path"] = d.path;
  if (!d.labels_path.empty()) j["data"]["labels_path"] = d.labels_path;
  const OptimizerConfig& o = c.optimizer;
  j["optimizer"] = {{"kind", name_of(o.kind, kOptimizers)}, {"lr", o.lr}, {"momentum", o.momentum}, {"weight_decay", o.weight_decay},
                    {"beta1", o.beta1}, {"beta2", o.beta2}, {"eps", o.eps}, {"nesterov", o.nesterov}};
  const ScheduleConfig& s = c.schedule;
  j["schedule"] = {{"kind", name_of(s.kind, kSchedules)}, {"warmup_steps", s.warmup_steps}, {"step_size", s.step_size},
                   {"gamma", s.gamma}, {"min_lr", s.min_lr}};
  if (c.epochs) j["epochs"] = *c.epochs;
  if (c.max_steps) j["max_steps"] = *c.max_steps;
  j["batch_size"] = c.batch_size.automatic ? json("auto") : json(c.batch_size.value);
  j["auto_batch"] = {{"max", c.batch_size.max}, {"memory_fraction", c.batch_size.memory_fraction}};
  if (c.batch_size.cpu_memory_limit_bytes) j["auto_batch"]["cpu_memory_limit"] = *c.batch_size.cpu_memory_limit_bytes;
  j["grad_accum_steps"] = c.grad_accum_steps;
  if (c.grad_clip_norm) j["grad_clip_norm"] = *c.grad_clip_norm;
  j["precision"] = name_of(c.precision, kPrecisions);
  j["device"] = c.device;
  j["eval"] = {{"every_steps", c.eval.every_steps}, {"early_stopping_patience", c.eval.early_stopping_patience}, {"min_delta", c.eval.min_delta}};
  j["checkpoint"] = {{"dir", c.checkpoint.dir}, {"every_steps", c.checkpoint.every_steps}, {"keep_last", c.checkpoint.keep_last}};
  j["seed"] = c.seed;
  j["log_every_steps"] = c.log_every_steps;
  j["output_dir"] = c.output_dir;
  j["threads"] = c.threads;
  j["on_complete"] = json::object();
  if (c.on_complete.command) j["on_complete"]["command"] = *c.on_complete.command;
  if (c.on_complete.webhook_env) j["on_complete"]["webhook_env"] = *c.on_complete.webhook_env;
  return j;
}

}  // namespace ferry::train
