// The JSON Schema subset checker: see json_schema.hpp. Messages are built from the schema itself
// ("expected an integer from 1 to 65535, got 70000"), with the conditions of an if/then that
// applied ("(when \"source\" is \"mnist\")"), since the schemas carry no error texts.
#include "protocol/json_schema.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "protocol/json_reader.hpp"
#include "protocol/spelling.hpp"

namespace ferry::protocol {
namespace {

using json = nlohmann::json;
using Violations = std::vector<SchemaViolation>;
using PatternMap = std::map<std::string, std::regex, std::less<>>;

const std::set<std::string, std::less<>> kAnnotations = {"$schema", "$id",     "$defs",   "$comment",
                                                         "title",   "description", "default", "examples"};
const std::set<std::string, std::less<>> kKeywords = {
    "$ref",       "type",     "enum",          "const",    "minLength", "maxLength",           "pattern",
    "minimum",    "maximum",  "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems", "items",
    "required",   "properties", "additionalProperties", "propertyNames", "allOf", "anyOf", "oneOf",
    "not",        "if",       "then",          "else"};
const std::set<std::string, std::less<>> kTypes = {"object", "array", "string", "boolean", "null", "number", "integer"};

// ---- compile-time checks of the schema itself ----------------------------------------------

std::optional<std::string> check_schema(const json& s, const json& root, const std::string& where, PatternMap& patterns);

std::optional<std::string> check_subschemas(const std::string& kw, const json& value, const json& root,
                                            const std::string& where, PatternMap& patterns) {
  std::string at = where + "/" + kw;
  if (kw == "properties" || kw == "$defs") {
    if (!value.is_object()) return at + ": expected an object of schemas";
    for (const auto& [k, sub] : value.items())
      if (auto e = check_schema(sub, root, pointer_append(at, k), patterns)) return e;
  } else if (kw == "allOf" || kw == "anyOf" || kw == "oneOf") {
    if (!value.is_array() || value.empty()) return at + ": expected a non-empty array of schemas";
    for (std::size_t i = 0; i < value.size(); ++i)
      if (auto e = check_schema(value[i], root, at + "/" + std::to_string(i), patterns)) return e;
  } else {  // items, additionalProperties, propertyNames, not, if, then, else
    return check_schema(value, root, at, patterns);
  }
  return std::nullopt;
}

std::optional<std::string> check_keyword(const std::string& kw, const json& value, const json& root,
                                         const std::string& where, PatternMap& patterns) {
  std::string at = where + "/" + kw;
  if (kw == "$ref") {
    if (!value.is_string() || !value.get_ref<const std::string&>().starts_with("#"))
      return at + ": only local references (\"#/...\") are supported";
    try {
      if (!root.contains(json::json_pointer(value.get<std::string>().substr(1)))) return at + ": does not resolve";
    } catch (const json::exception&) {
      return at + ": not a JSON pointer";
    }
  } else if (kw == "type") {
    json list = value.is_array() ? value : json::array({value});
    for (const auto& t : list)
      if (!t.is_string() || !kTypes.contains(t.get<std::string>())) return at + ": unknown type " + t.dump();
  } else if (kw == "enum" || kw == "required") {
    if (!value.is_array()) return at + ": expected an array";
    if (kw == "required")
      for (const auto& k : value)
        if (!k.is_string()) return at + ": expected member names";
  } else if (kw == "pattern") {
    if (!value.is_string()) return at + ": expected a string";
    try {
      patterns.try_emplace(value.get<std::string>(), value.get<std::string>(), std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return at + ": does not compile: " + e.what();
    }
  } else if (kw.starts_with("min") || kw.starts_with("max") || kw.starts_with("exclusive")) {
    if (!value.is_number()) return at + ": expected a number";
    if ((kw.ends_with("Length") || kw.ends_with("Items")) && !value.is_number_unsigned())
      return at + ": expected a non-negative integer";
  } else if (kw != "const") {
    return check_subschemas(kw, value, root, where, patterns);
  }
  return std::nullopt;
}

std::optional<std::string> check_schema(const json& s, const json& root, const std::string& where, PatternMap& patterns) {
  if (s.is_boolean()) return std::nullopt;
  if (!s.is_object()) return where + ": a schema must be an object or a boolean";
  for (const auto& [kw, value] : s.items()) {
    if (kw == "$defs") {
      if (auto e = check_subschemas(kw, value, root, where, patterns)) return e;
      continue;
    }
    if (kAnnotations.contains(kw)) continue;
    if (!kKeywords.contains(kw)) return where + ": keyword \"" + kw + "\" is not supported";
    if (auto e = check_keyword(kw, value, root, where, patterns)) return e;
  }
  return std::nullopt;
}

// ---- phrases ----------------------------------------------------------------------------------

std::string dump(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

// A value as it appears in a message: short, never a whole object.
std::string value_phrase(const json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  std::string text = dump(v);
  constexpr std::size_t kMax = 60;
  if (text.size() <= kMax) return text;
  std::size_t cut = kMax - 4;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  return text.substr(0, cut) + (v.is_string() ? "...\"" : "...");
}

std::string type_phrase(std::string_view t) {
  if (t == "object") return "an object";
  if (t == "array") return "an array";
  if (t == "string") return "a string";
  if (t == "boolean") return "true or false";
  if (t == "integer") return "an integer";
  if (t == "number") return "a number";
  return std::string(t);
}

std::vector<std::string> types_of(const json& schema) {
  std::vector<std::string> out;
  if (auto t = schema.find("type"); t != schema.end()) {
    if (t->is_string()) out.push_back(t->get<std::string>());
    else
      for (const auto& e : *t) out.push_back(e.get<std::string>());
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep, std::string_view last_sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += i + 1 == parts.size() ? last_sep : sep;
    out += parts[i];
  }
  return out;
}

bool has_numeric_bounds(const json& s) {
  return s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum");
}

// "an integer from 1 to 65535", "a number > 0 and <= 10", "a number >= 2".
std::string bounds_phrase(const json& s) {
  auto types = types_of(s);
  std::string kind = std::ranges::find(types, "integer") != types.end() ? "an integer" : "a number";
  auto lo = s.find("exclusiveMinimum") != s.end() ? s.find("exclusiveMinimum") : s.find("minimum");
  auto hi = s.find("exclusiveMaximum") != s.end() ? s.find("exclusiveMaximum") : s.find("maximum");
  bool lo_incl = lo != s.end() && lo.key() == "minimum", hi_incl = hi != s.end() && hi.key() == "maximum";
  if (lo_incl && hi_incl) return kind + " from " + dump(*lo) + " to " + dump(*hi);
  std::vector<std::string> parts;
  if (lo != s.end()) parts.push_back((lo_incl ? ">= " : "> ") + dump(*lo));
  if (hi != s.end()) parts.push_back((hi_incl ? "<= " : "< ") + dump(*hi));
  return kind + " " + join(parts, " and ", " and ");
}

struct Phrase {
  std::string text;  // empty: the schema cannot be summed up in a phrase
  bool quotes_pattern = false;
};

Phrase expected_phrase(const json& s, const json& root);

Phrase any_of_phrase(const json& branches, const json& root) {
  Phrase out;
  std::vector<std::string> texts;
  for (const auto& b : branches) {
    Phrase p = expected_phrase(b, root);
    if (p.text.empty()) return {};
    texts.push_back(p.text);
    out.quotes_pattern = out.quotes_pattern || p.quotes_pattern;
  }
  out.text = join(texts, ", ", " or ");
  return out;
}

// What a schema accepts, in a few words: "one of \"a\", \"b\"", "a non-empty string", ...
Phrase expected_phrase(const json& s, const json& root) {
  if (!s.is_object()) return {};
  if (auto c = s.find("const"); c != s.end()) return {dump(*c)};
  if (auto e = s.find("enum"); e != s.end()) {
    std::vector<std::string> values;
    for (const auto& v : *e) values.push_back(dump(v));
    return {"one of " + join(values, ", ", ", ")};
  }
  auto types = types_of(s);
  bool numeric = types.empty() || std::ranges::find(types, "integer") != types.end() ||
                 std::ranges::find(types, "number") != types.end();
  if (has_numeric_bounds(s) && numeric) return {bounds_phrase(s)};
  if (types == std::vector<std::string>{"string"}) {
    if (auto p = s.find("pattern"); p != s.end()) return {"a string matching " + p->get<std::string>(), true};
    if (s.value("minLength", 0) == 1) return {"a non-empty string"};
  }
  if (types == std::vector<std::string>{"array"} && s.value("minItems", 0) == 1) return {"a non-empty array"};
  if (!types.empty()) {
    std::vector<std::string> texts;
    for (const auto& t : types) texts.push_back(type_phrase(t));
    return {join(texts, ", ", " or ")};
  }
  if (auto a = s.find("anyOf"); a != s.end()) return any_of_phrase(*a, root);
  if (auto r = s.find("$ref"); r != s.end()) return expected_phrase(root.at(json::json_pointer(r->get<std::string>().substr(1))), root);
  return {};
}

// ---- if/then conditions, for "(when ...)" ----------------------------------------------------

struct Clause {
  std::string name;   // dotted path: "data.source"
  std::string op;     // "is", "is not", ">=", ">", "<", "<=", "is given", "is not given"
  std::string value;  // JSON text; empty for "is given"
};

std::string render(const Clause& c) {
  std::string out = "\"" + c.name + "\" " + c.op;
  if (!c.value.empty()) out += " " + c.value;
  return out;
}

Clause negate(Clause c) {
  static const std::map<std::string, std::string> kOpposite = {{"is", "is not"}, {"is not", "is"}, {">=", "<"},
                                                               {">", "<="},  {"<", ">="},       {"<=", ">"},
                                                               {"is given", "is not given"}};
  c.op = kOpposite.at(c.op);
  return c;
}

std::string dotted(const std::string& base, std::string_view key) { return base.empty() ? std::string(key) : base + "." + std::string(key); }

// The clauses an "if" schema tests, when it is made only of const / not-const / minimum tests
// and required lists; nullopt when it says more than that.
bool describe_condition(const json& s, const std::string& path, std::vector<Clause>& out) {
  if (!s.is_object()) return false;
  const json* props = s.contains("properties") ? &s["properties"] : nullptr;
  for (const auto& [kw, value] : s.items()) {
    if (kAnnotations.contains(kw)) continue;
    if (kw == "required") {
      for (const auto& k : value)
        if (!props || !props->contains(k.get<std::string>())) out.push_back({dotted(path, k.get<std::string>()), "is given", ""});
    } else if (kw == "properties") {
      for (const auto& [k, sub] : value.items()) {
        std::string name = dotted(path, k);
        if (sub.contains("const")) out.push_back({name, "is", dump(sub["const"])});
        else if (sub.contains("not") && sub["not"].contains("const")) out.push_back({name, "is not", dump(sub["not"]["const"])});
        else if (sub.contains("minimum")) out.push_back({name, ">=", dump(sub["minimum"])});
        else if (sub.contains("exclusiveMinimum")) out.push_back({name, ">", dump(sub["exclusiveMinimum"])});
        else if (!describe_condition(sub, name, out)) return false;
      }
    } else {
      return false;
    }
  }
  return true;
}

std::string dotted_pointer(const std::string& pointer) {
  std::string out;
  std::size_t i = 0;
  while (i < pointer.size()) {
    std::size_t next = pointer.find('/', i + 1);
    std::string token = pointer.substr(i + 1, next == std::string::npos ? std::string::npos : next - i - 1);
    std::string plain;
    for (std::size_t j = 0; j < token.size(); ++j) {
      if (token[j] == '~' && j + 1 < token.size()) plain += token[++j] == '1' ? '/' : '~';
      else plain += token[j];
    }
    out = dotted(out, plain);
    i = next == std::string::npos ? pointer.size() : next;
  }
  return out;
}

// ---- numbers ---------------------------------------------------------------------------------

// -1, 0, 1; exact for integers of either signedness, doubles otherwise.
int compare_numbers(const json& a, const json& b) {
  if (a.is_number_integer() && b.is_number_integer()) {
    auto negative = [](const json& j) { return !j.is_number_unsigned() && j.get<std::int64_t>() < 0; };
    bool na = negative(a), nb = negative(b);
    if (na != nb) return na ? -1 : 1;
    if (na) {
      auto x = a.get<std::int64_t>(), y = b.get<std::int64_t>();
      return (x > y) - (x < y);
    }
    auto x = a.get<std::uint64_t>(), y = b.get<std::uint64_t>();
    return (x > y) - (x < y);
  }
  double x = a.get<double>(), y = b.get<double>();
  return (x > y) - (x < y);
}

bool has_type(const json& instance, std::string_view type) {
  if (type == "object") return instance.is_object();
  if (type == "array") return instance.is_array();
  if (type == "string") return instance.is_string();
  if (type == "boolean") return instance.is_boolean();
  if (type == "null") return instance.is_null();
  if (type == "number") return instance.is_number();
  if (instance.is_number_integer()) return true;  // "integer"
  if (!instance.is_number_float()) return false;
  double d = instance.get<double>();
  return std::isfinite(d) && std::trunc(d) == d;  // 2020-12: 1.0 is an integer
}

std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

// Which violation wins when several hit one place: the most basic.
int rank(std::string_view keyword) {
  if (keyword == "type") return 0;
  if (keyword == "pattern" || keyword == "propertyNames") return 3;
  if (keyword.starts_with("min") || keyword.starts_with("max") || keyword.starts_with("exclusive")) return 2;
  return 1;
}

}  // namespace

// ---- validation ------------------------------------------------------------------------------

namespace {

class Checker {
 public:
  Checker(const json& root, const PatternMap& patterns) : root_(root), patterns_(patterns) {}

  void check(const json& schema, const json& instance, const std::string& ptr, Violations& out) {
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) add(out, ptr, SchemaTarget::value, "false", "not allowed here");
      return;
    }
    if (auto r = schema.find("$ref"); r != schema.end()) check(resolve(*r), instance, ptr, out);
    check_type_and_values(schema, instance, ptr, out);
    if (instance.is_string()) check_string(schema, instance.get_ref<const std::string&>(), ptr, out);
    if (instance.is_number()) check_number(schema, instance, ptr, out);
    if (instance.is_array()) check_array(schema, instance, ptr, out);
    if (instance.is_object()) check_object(schema, instance, ptr, out);
    check_combinators(schema, instance, ptr, out);
    check_conditional(schema, instance, ptr, out);
  }

 private:
  const json& resolve(const json& ref) const { return root_.at(json::json_pointer(ref.get<std::string>().substr(1))); }

  bool valid(const json& schema, const json& instance, const std::string& ptr) {
    Violations scratch;
    check(schema, instance, ptr, scratch);
    return scratch.empty();
  }

  void add(Violations& out, const std::string& ptr, SchemaTarget target, std::string keyword, std::string message,
           bool quotes_pattern = false) {
    std::vector<std::string> texts;
    for (std::size_t i = 0; i < conditions_.size(); ++i) {
      // "x is not A and x is B" (an else, then a nested if) says no more than "x is B".
      auto narrowed = [&](const Clause& later) { return later.name == conditions_[i].name && later.op == "is"; };
      if (conditions_[i].op == "is not" && std::any_of(conditions_.begin() + i + 1, conditions_.end(), narrowed)) continue;
      texts.push_back(render(conditions_[i]));
    }
    if (!texts.empty()) message += " (when " + join(texts, " and ", " and ") + ")";
    out.push_back(SchemaViolation{ptr, target, std::move(keyword), std::move(message), quotes_pattern});
  }

  void check_type_and_values(const json& s, const json& instance, const std::string& ptr, Violations& out) {
    if (s.contains("type")) {
      auto types = types_of(s);
      if (std::ranges::none_of(types, [&](const std::string& t) { return has_type(instance, t); })) {
        Phrase p = expected_phrase(s, root_);
        add(out, ptr, SchemaTarget::value, "type", "expected " + p.text + ", got " + value_phrase(instance), p.quotes_pattern);
        return;
      }
    }
    if (auto e = s.find("enum"); e != s.end() && std::find(e->begin(), e->end(), instance) == e->end()) {
      std::string message = "expected " + expected_phrase(s, root_).text + ", got " + value_phrase(instance);
      if (instance.is_string()) {
        std::vector<std::string> names;
        for (const auto& v : *e)
          if (v.is_string()) names.push_back(v.get<std::string>());
        if (auto near = closest_spelling(instance.get<std::string>(), names)) message += " (did you mean \"" + *near + "\"?)";
      }
      add(out, ptr, SchemaTarget::value, "enum", message);
    }
    if (auto c = s.find("const"); c != s.end() && *c != instance)
      add(out, ptr, SchemaTarget::value, "const", "expected " + dump(*c) + ", got " + value_phrase(instance));
  }

  void check_string(const json& s, const std::string& text, const std::string& ptr, Violations& out) {
    std::size_t n = code_points(text);
    if (auto m = s.find("minLength"); m != s.end() && n < m->get<std::size_t>())
      add(out, ptr, SchemaTarget::value, "minLength",
          m->get<std::size_t>() == 1 ? "expected a non-empty string"
                                     : "expected at least " + dump(*m) + " characters, got " + std::to_string(n));
    if (auto m = s.find("maxLength"); m != s.end() && n > m->get<std::size_t>())
      add(out, ptr, SchemaTarget::value, "maxLength", "expected at most " + dump(*m) + " characters, got " + std::to_string(n));
    if (auto p = s.find("pattern"); p != s.end()) {
      const auto& source = p->get_ref<const std::string&>();
      if (text.size() > kMaxPatternInput)
        add(out, ptr, SchemaTarget::value, "pattern", "too long: " + std::to_string(text.size()) + " bytes (at most " +
                                                          std::to_string(kMaxPatternInput) + ")");
      else if (!std::regex_search(text, patterns_.find(source)->second))
        add(out, ptr, SchemaTarget::value, "pattern", value_phrase(json(text)) + " does not match the pattern " + source, true);
    }
  }

  void check_number(const json& s, const json& instance, const std::string& ptr, Violations& out) {
    for (const char* kw : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
      auto b = s.find(kw);
      if (b == s.end()) continue;
      int c = compare_numbers(instance, *b);
      std::string_view k = kw;
      bool bad = k == "minimum" ? c < 0 : k == "exclusiveMinimum" ? c <= 0 : k == "maximum" ? c > 0 : c >= 0;
      if (bad) {
        add(out, ptr, SchemaTarget::value, kw, "expected " + bounds_phrase(s) + ", got " + dump(instance));
        return;
      }
    }
  }

  void check_array(const json& s, const json& instance, const std::string& ptr, Violations& out) {
    if (auto m = s.find("minItems"); m != s.end() && instance.size() < m->get<std::size_t>())
      add(out, ptr, SchemaTarget::value, "minItems",
          m->get<std::size_t>() == 1 ? "expected a non-empty array"
                                     : "expected at least " + dump(*m) + " items, got " + std::to_string(instance.size()));
    if (auto m = s.find("maxItems"); m != s.end() && instance.size() > m->get<std::size_t>())
      add(out, ptr, SchemaTarget::value, "maxItems",
          "expected at most " + dump(*m) + " items, got " + std::to_string(instance.size()));
    if (auto items = s.find("items"); items != s.end())
      for (std::size_t i = 0; i < instance.size(); ++i) check(*items, instance[i], ptr + "/" + std::to_string(i), out);
  }

  void check_object(const json& s, const json& instance, const std::string& ptr, Violations& out) {
    if (auto r = s.find("required"); r != s.end())
      for (const auto& k : *r)
        if (!instance.contains(k.get<std::string>()))
          add(out, pointer_append(ptr, k.get<std::string>()), SchemaTarget::missing, "required",
              "missing required field \"" + k.get<std::string>() + "\"");
    const json* props = s.contains("properties") ? &s["properties"] : nullptr;
    if (props)
      for (const auto& [k, sub] : props->items())
        if (auto it = instance.find(k); it != instance.end()) check(sub, *it, pointer_append(ptr, k), out);
    if (auto extra = s.find("additionalProperties"); extra != s.end())
      for (const auto& [k, v] : instance.items()) {
        if (props && props->contains(k)) continue;
        if (extra->is_boolean() && !extra->get<bool>())
          add(out, pointer_append(ptr, k), SchemaTarget::key, "additionalProperties", unknown_field(k, props));
        else
          check(*extra, v, pointer_append(ptr, k), out);
      }
    if (auto names = s.find("propertyNames"); names != s.end())
      for (const auto& [k, v] : instance.items()) {
        Violations scratch;
        check(*names, json(k), pointer_append(ptr, k), scratch);
        for (auto& e : scratch) {
          e.target = SchemaTarget::key;
          e.keyword = "propertyNames";
          out.push_back(std::move(e));
        }
      }
  }

  static std::string unknown_field(const std::string& key, const json* props) {
    std::string message = value_phrase(json(key)) + " is not a known field";
    std::vector<std::string> known;
    if (props)
      for (const auto& [k, _] : props->items()) known.push_back(k);
    if (auto near = closest_spelling(key, known)) return message + " (did you mean \"" + *near + "\"?)";
    if (known.empty() || known.size() > 12) return message;
    for (auto& k : known) k = "\"" + k + "\"";
    return message + "; known fields: " + join(known, ", ", ", ");
  }

  static bool required_only(const json& branch) {
    if (!branch.is_object() || !branch.contains("required")) return false;
    for (const auto& [kw, _] : branch.items())
      if (kw != "required" && !kAnnotations.contains(kw)) return false;
    return true;
  }

  void check_combinators(const json& s, const json& instance, const std::string& ptr, Violations& out) {
    if (auto all = s.find("allOf"); all != s.end())
      for (const auto& branch : *all) check(branch, instance, ptr, out);
    if (auto any = s.find("anyOf");
        any != s.end() && std::none_of(any->begin(), any->end(), [&](const json& b) { return valid(b, instance, ptr); }))
      report_no_branch(*any, instance, ptr, "anyOf", out);
    if (auto one = s.find("oneOf"); one != s.end()) check_one_of(*one, instance, ptr, out);
    if (auto n = s.find("not"); n != s.end() && valid(*n, instance, ptr)) {
      Phrase p = expected_phrase(*n, root_);
      std::string message = n->contains("const") ? value_phrase(instance) + " is not allowed"
                            : p.text.empty()     ? value_phrase(instance) + " is not allowed here"
                                                 : "must not be " + p.text;
      add(out, ptr, SchemaTarget::value, "not", message, p.quotes_pattern);
    }
  }

  // No alternative matched: name them all when each fits in a phrase, else show why the closest
  // one (fewest violations) failed.
  void report_no_branch(const json& branches, const json& instance, const std::string& ptr, const char* keyword,
                        Violations& out) {
    Phrase p = any_of_phrase(branches, root_);
    if (!p.text.empty()) {
      add(out, ptr, SchemaTarget::value, keyword, "expected " + p.text + ", got " + value_phrase(instance), p.quotes_pattern);
      return;
    }
    std::optional<Violations> best;
    for (const auto& b : branches) {
      Violations scratch;
      check(b, instance, ptr, scratch);
      if (!best || scratch.size() < best->size()) best = std::move(scratch);
    }
    for (auto& v : *best) out.push_back(std::move(v));
  }

  void check_one_of(const json& branches, const json& instance, const std::string& ptr, Violations& out) {
    auto matched = std::count_if(branches.begin(), branches.end(), [&](const json& b) { return valid(b, instance, ptr); });
    if (matched == 1) return;
    bool members = instance.is_object() && std::all_of(branches.begin(), branches.end(), required_only);
    if (!members) {
      if (matched == 0) report_no_branch(branches, instance, ptr, "oneOf", out);
      else add(out, ptr, SchemaTarget::value, "oneOf", "matches more than one of the allowed forms");
      return;
    }
    // The common "exactly one of these members" shape gets its own words and place.
    std::vector<std::string> names, present;
    for (const auto& b : branches)
      for (const auto& k : b["required"]) {
        names.push_back("\"" + k.get<std::string>() + "\"");
        if (instance.contains(k.get<std::string>())) present.push_back(k.get<std::string>());
      }
    if (matched == 0)
      add(out, ptr, SchemaTarget::object, "oneOf", "missing " + join(names, ", ", " or ") + " (give exactly one)");
    else
      add(out, pointer_append(ptr, present.back()), SchemaTarget::key, "oneOf",
          "give only one of " + join(names, ", ", " and ") + ", not both");
  }

  void check_conditional(const json& s, const json& instance, const std::string& ptr, Violations& out) {
    auto cond = s.find("if");
    if (cond == s.end()) return;
    bool holds = valid(*cond, instance, ptr);
    auto branch = s.find(holds ? "then" : "else");
    if (branch == s.end()) return;
    std::vector<Clause> clauses;
    if (!describe_condition(*cond, dotted_pointer(ptr), clauses)) clauses.clear();
    if (!holds && clauses.size() != 1) clauses.clear();  // "not (a and b)" reads badly; say nothing
    if (!holds && !clauses.empty()) clauses[0] = negate(clauses[0]);
    conditions_.insert(conditions_.end(), clauses.begin(), clauses.end());
    check(*branch, instance, ptr, out);
    conditions_.resize(conditions_.size() - clauses.size());
  }

  const json& root_;
  const PatternMap& patterns_;
  std::vector<Clause> conditions_;
};

// At most one violation per (pointer, target): the lowest rank, the first among equals.
Violations keep_most_basic(Violations all) {
  Violations out;
  std::map<std::pair<std::string, SchemaTarget>, std::size_t> index;
  for (auto& v : all) {
    auto [it, inserted] = index.try_emplace({v.pointer, v.target}, out.size());
    if (inserted) out.push_back(std::move(v));
    else if (rank(v.keyword) < rank(out[it->second].keyword)) out[it->second] = std::move(v);
  }
  return out;
}

}  // namespace

struct JsonSchema::State {
  json root;
  PatternMap patterns;
};

std::expected<JsonSchema, std::string> JsonSchema::compile(json schema) {
  auto state = std::make_shared<State>();
  state->root = std::move(schema);
  if (auto error = check_schema(state->root, state->root, "#", state->patterns)) return std::unexpected(*error);
  return JsonSchema(std::move(state));
}

std::vector<SchemaViolation> JsonSchema::validate(const json& instance) const {
  Violations all;
  Checker(state_->root, state_->patterns).check(state_->root, instance, "", all);
  return keep_most_basic(std::move(all));
}

const json& JsonSchema::document() const { return state_->root; }

}  // namespace ferry::protocol
