// ferry.json and training-config diagnostics: see config_diagnostics.hpp. Three sources find
// problems (ferry's rules, the JSON Schema, the C++ validator the binaries use); one place gets
// one diagnostic, from the most specific source that saw it.
#include "helper/diagnostics/config_diagnostics.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include "helper/deploy/project_config.hpp"
#include "helper/diagnostics/json_locator.hpp"
#include "helper/diagnostics/line_index.hpp"
#include "helper/diagnostics/project_rules.hpp"
#include "protocol/spec_schemas.hpp"
#include "remote-runtime/train/train_config.hpp"

namespace ferry::diagnostics {
namespace {

using json = nlohmann::json;

enum class Source { rule, schema, validator };

struct ValidatorError {
  std::string pointer;
  std::string message;
};

struct Finding {
  std::string pointer;
  Mark mark = Mark::value;
  Severity severity = Severity::error;
  std::string message;
  std::string code;
  Source source = Source::schema;
  bool quotes_pattern = false;        // the message only quotes a regex: a validator's reads better
  bool missing = false;               // about an absent member
  std::optional<ByteSpan> span;       // placed already (duplicate keys)
};

bool covers(const std::string& found, const std::string& pointer) {
  return found == pointer || (!pointer.empty() && found.starts_with(pointer + "/"));
}

class FindingSet {
 public:
  void add_rules(std::vector<RuleFinding> rules) {
    for (auto& r : rules)
      findings_.push_back({std::move(r.pointer), r.mark, r.severity, std::move(r.message), std::move(r.code), Source::rule, false, false, {}});
  }

  // A schema violation where one of ferry's rules already reports an error says the same, less well.
  void add_schema(const std::vector<protocol::SchemaViolation>& violations) {
    std::set<std::string, std::less<>> ruled;
    for (const auto& f : findings_)
      if (f.source == Source::rule && f.severity == Severity::error) ruled.insert(f.pointer);
    for (const auto& v : violations) {
      if (ruled.contains(v.pointer)) continue;
      Finding f{v.pointer, Mark::value, Severity::error, v.message, "schema", Source::schema, v.quotes_pattern, false, {}};
      if (v.target == protocol::SchemaTarget::key) f.mark = Mark::key;
      // A missing member's pointer is not in the text: mark_span falls back to its parent object.
      if (v.target == protocol::SchemaTarget::object || v.target == protocol::SchemaTarget::missing) f.mark = Mark::members;
      f.missing = v.target == protocol::SchemaTarget::missing;
      findings_.push_back(std::move(f));
    }
  }

  // The validator stops at its first error. Usually the schema saw it too: at that pointer or
  // inside it, or it found a member missing that the error is inside of. Then the validator's
  // words are kept only where they say more: instead of a quoted regex, or of "missing required
  // field" when they name what is needed in it.
  void add_validator(const std::string& pointer, const std::string& message, const std::string& code) {
    bool seen = false;
    for (auto& f : findings_) {
      bool missing_parent = f.missing && pointer.starts_with(f.pointer + "/");
      if (!covers(f.pointer, pointer) && !missing_parent) continue;
      seen = true;
      if (f.pointer == pointer && f.quotes_pattern) f.message = message, f.quotes_pattern = false;
      if (missing_parent) f.message = message, f.pointer = pointer;  // placed alike: both are absent
    }
    if (seen) return;
    Mark mark = message.starts_with("unknown key") ? Mark::key : Mark::value;
    findings_.push_back({pointer, mark, Severity::error, message, code, Source::validator, false, false, {}});
  }

  // A later validator error (see validator_errors) only lends its words to a regex-only message.
  void add_validator_words(const ValidatorError& e) {
    for (auto& f : findings_)
      if (f.pointer == e.pointer && f.quotes_pattern) f.message = e.message, f.quotes_pattern = false;
  }

  // nlohmann (and so ferry) stops reading at a NUL byte: the rest of the file is ignored.
  void add_nul(std::string_view text) {
    if (auto nul = text.find('\0'); nul != std::string_view::npos)
      findings_.push_back({"", Mark::value, Severity::warning, "a NUL byte ends the JSON here: ferry ignores the rest of the file",
                           "json", Source::rule, false, false, ByteSpan{nul, text.size()}});
  }

  void add_duplicates(const std::vector<DuplicateKey>& duplicates) {
    for (const auto& d : duplicates)
      findings_.push_back({d.pointer, Mark::key, Severity::warning,
                           "this key is given again later in the object; this value is ignored", "json.duplicateKey",
                           Source::rule, false, false, d.key});
  }

  // The first kMaxDiagnostics by position; only those get line/character (a cost per line length).
  std::vector<Diagnostic> finish(std::string_view text, const JsonLocations& locations) && {
    std::vector<std::pair<ByteSpan, Finding*>> placed;
    for (auto& f : findings_) placed.emplace_back(f.span.value_or(mark_span(locations, text, f.pointer, f.mark)), &f);
    std::ranges::stable_sort(placed, {}, [](const auto& p) { return p.first.begin; });
    if (placed.size() > kMaxDiagnostics) placed.resize(kMaxDiagnostics);
    LineIndex lines(text);
    std::vector<Diagnostic> out;
    for (auto& [span, f] : placed)
      out.push_back({lines.range(span.begin, span.end), f->severity, std::move(f->message), std::move(f->code), std::move(f->pointer)});
    return out;
  }

 private:
  std::vector<Finding> findings_;
};

// Removes the object member `pointer` names from `doc`; false when it names none.
bool erase_member(json& doc, const std::string& pointer) {
  try {
    json::json_pointer p(pointer);
    if (p.empty() || !doc.contains(p)) return false;
    json& parent = doc[p.parent_pointer()];
    return parent.is_object() && parent.erase(p.back()) > 0;
  } catch (const json::exception&) {
    return false;
  }
}

// The validators stop at their first error. For their words at more places, the member an error
// names is removed from a copy and the copy validated again (16 times at most). Only the first
// error surely holds for the file as written: later runs see defaults where values were removed.
template <class Validate>
std::vector<ValidatorError> validator_errors(json doc, Validate&& validate) {
  std::vector<ValidatorError> out;
  for (int i = 0; i < 16; ++i) {
    std::optional<ValidatorError> error = validate(doc);
    if (!error) break;
    out.push_back(*error);
    if (!erase_member(doc, error->pointer)) break;
  }
  return out;
}

void add_validator_errors(FindingSet& set, const std::vector<ValidatorError>& errors, const std::string& code) {
  for (std::size_t i = 0; i < errors.size(); ++i) {
    if (i == 0) set.add_validator(errors[i].pointer, errors[i].message, code);
    else set.add_validator_words(errors[i]);
  }
}

std::vector<Diagnostic> syntax_error(std::string_view text, const JsonSyntaxError& e) {
  LineIndex lines(text);
  return {{lines.range(e.span.begin, e.span.end), Severity::error, e.message, "json", ""}};
}

// parse_project runs std::regex over paths and names; a string past kMaxPatternInput could
// overflow the stack there. The schema reports such strings itself.
bool has_huge_string(const json& doc) {
  std::vector<const json*> todo{&doc};
  while (!todo.empty()) {
    const json* j = todo.back();
    todo.pop_back();
    if (j->is_string() && j->get_ref<const std::string&>().size() > protocol::kMaxPatternInput) return true;
    if (j->is_object())
      for (const auto& [k, v] : j->items()) {
        if (k.size() > protocol::kMaxPatternInput) return true;
        todo.push_back(&v);
      }
    if (j->is_array())
      for (const auto& v : *j) todo.push_back(&v);
  }
  return false;
}

}  // namespace

std::vector<Diagnostic> diagnose_project_file(std::string_view text, const std::filesystem::path& file,
                                              const ProjectFileContext& context) {
  auto located = parse_located(text);
  if (!located) return syntax_error(text, located.error());
  std::filesystem::path root = file.parent_path();
  FindingSet set;
  set.add_nul(text);
  set.add_duplicates(located->locations.duplicates());
  set.add_rules(check_project_rules(located->value, {root, context.ssh_local, context.check_ssh_host}));
  set.add_schema(protocol::ferry_schema().validate(located->value));
  if (!has_huge_string(located->value)) {
    auto errors = validator_errors(located->value, [&](const json& doc) -> std::optional<ValidatorError> {
      auto config = deploy::parse_project(doc, root);
      if (config) return std::nullopt;
      return ValidatorError{config.error().pointer, config.error().message};
    });
    add_validator_errors(set, errors, "ferry.config");
  }
  return std::move(set).finish(text, located->locations);
}

std::vector<Diagnostic> diagnose_train_config(std::string_view text) {
  auto located = parse_located(text);
  if (!located) return syntax_error(text, located.error());
  FindingSet set;
  set.add_nul(text);
  set.add_duplicates(located->locations.duplicates());
  set.add_schema(protocol::train_config_schema().validate(located->value));
  auto errors = validator_errors(located->value, [](const json& doc) -> std::optional<ValidatorError> {
    auto config = train::parse_train_config(doc);
    if (config) return std::nullopt;
    return ValidatorError{config.error().pointer, config.error().message};
  });
  add_validator_errors(set, errors, "ferry.trainConfig");
  return std::move(set).finish(text, located->locations);
}

bool looks_like_train_config(std::string_view text) {
  auto locations = JsonLocations::scan(text);
  if (const JsonNodeSpan* schema = locations.find("/$schema")) {
    std::string_view value = text.substr(schema->value.begin, schema->value.end - schema->value.begin);
    if (value.find("train-config.schema.json") != std::string_view::npos) return true;
  }
  auto keys = locations.top_level_keys();
  auto has = [&](std::string_view k) { return std::ranges::find(keys, k) != keys.end(); };
  return has("model") && (has("data") || has("optimizer") || has("max_steps") || has("epochs"));
}

}  // namespace ferry::diagnostics
