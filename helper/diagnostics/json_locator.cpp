// The JSON locator: see json_locator.hpp. The scanner is iterative (an explicit stack), so no
// nesting depth can overflow the call stack.
#include "helper/diagnostics/json_locator.hpp"

#include <charconv>

#include "helper/diagnostics/line_index.hpp"
#include "protocol/json_parse.hpp"

namespace ferry::diagnostics {
namespace {

constexpr std::size_t kMaxDuplicates = 100;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool ends_scalar(char c) { return is_space(c) || c == ',' || c == ']' || c == '}' || c == ':' || c == '"' || c == '[' || c == '{'; }

// The JSON pointer tokens of `pointer`, unescaped; nullopt when it is not a pointer.
std::optional<std::vector<std::string>> pointer_tokens(std::string_view pointer) {
  std::vector<std::string> out;
  if (pointer.empty()) return out;
  if (pointer[0] != '/') return std::nullopt;
  std::string token;
  for (std::size_t i = 1; i <= pointer.size(); ++i) {
    if (i == pointer.size() || pointer[i] == '/') {
      out.push_back(std::move(token));
      token.clear();
    } else if (pointer[i] == '~' && i + 1 < pointer.size() && (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
      token += pointer[++i] == '1' ? '/' : '~';
    } else {
      token += pointer[i];
    }
  }
  return out;
}

std::string escape_token(std::string_view token) {
  std::string out;
  for (char c : token) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

}  // namespace

class JsonScanner {
 public:
  JsonScanner(std::string_view text, JsonLocations& out) : t_(text), out_(out) {}

  bool run() {
    if (t_.starts_with("\xEF\xBB\xBF")) pos_ = 3;
    skip_space();
    if (!value(std::nullopt)) return false;
    while (!stack_.empty()) {
      skip_space();
      if (pos_ >= t_.size()) return false;
      Frame& f = stack_.back();
      if (t_[pos_] == (f.object ? '}' : ']')) {
        out_.nodes_[f.node].span.value.end = ++pos_;
        stack_.pop_back();
        continue;
      }
      if (f.count > 0) {
        if (t_[pos_] != ',') return false;
        ++pos_;
        skip_space();
      }
      std::optional<ByteSpan> key;
      if (f.object) {
        key = key_then_colon();
        if (!key) return false;
      }
      ++f.count;  // before value(): it may push, and `f` would dangle
      if (!value(key)) return false;
    }
    skip_space();
    return pos_ == t_.size();
  }

 private:
  struct Frame {
    std::size_t node;
    bool object;
    std::size_t count = 0;
    std::string token;  // this node's token in its parent, for duplicate reports
  };

  void skip_space() {
    while (pos_ < t_.size() && is_space(t_[pos_])) ++pos_;
  }

  // pos_ at '"': the index after the closing quote.
  std::optional<std::size_t> string_end(std::size_t at) const {
    for (std::size_t i = at + 1; i < t_.size(); ++i) {
      if (t_[i] == '\\') ++i;
      else if (t_[i] == '"') return i + 1;
    }
    return std::nullopt;
  }

  std::optional<ByteSpan> key_then_colon() {
    if (pos_ >= t_.size() || t_[pos_] != '"') return std::nullopt;
    auto end = string_end(pos_);
    if (!end) return std::nullopt;
    ByteSpan key{pos_, *end};
    std::string_view quoted = t_.substr(key.begin, key.end - key.begin);
    if (quoted.find('\\') == std::string_view::npos) {
      name_ = std::string(quoted.substr(1, quoted.size() - 2));
    } else {  // escapes: decode exactly as nlohmann does
      auto decoded = protocol::parse_json_text(quoted);
      if (!decoded || !decoded->is_string()) return std::nullopt;
      name_ = decoded->get<std::string>();
    }
    pos_ = *end;
    skip_space();
    if (pos_ >= t_.size() || t_[pos_] != ':') return std::nullopt;
    ++pos_;
    skip_space();
    return key;
  }

  // Records the value at pos_ as the next child of the innermost container (the root when none).
  bool value(std::optional<ByteSpan> key) {
    if (pos_ >= t_.size()) return false;
    std::size_t begin = pos_;
    char c = t_[pos_];
    std::size_t end;
    if (c == '{' || c == '[') {
      end = begin + 1;
    } else if (c == '"') {
      auto e = string_end(pos_);
      if (!e) return false;
      end = *e;
    } else {
      end = begin;
      while (end < t_.size() && !ends_scalar(t_[end])) ++end;
      if (end == begin) return false;
    }
    std::size_t node = out_.nodes_.size();
    out_.nodes_.push_back({JsonNodeSpan{{begin, end}, key}, {}, {}});
    std::string token = attach(node);
    pos_ = end;
    if (c == '{' || c == '[') stack_.push_back(Frame{node, c == '{', 0, std::move(token)});
    return true;
  }

  std::string attach(std::size_t node) {
    if (stack_.empty()) return "";
    auto& parent = out_.nodes_[stack_.back().node];
    if (!stack_.back().object) {
      parent.items.push_back(node);
      return std::to_string(parent.items.size() - 1);
    }
    auto [it, inserted] = parent.members.try_emplace(name_, node);
    if (!inserted) {
      if (out_.duplicates_.size() < kMaxDuplicates)
        out_.duplicates_.push_back({pointer_to(name_), *out_.nodes_[it->second].span.key});
      it->second = node;  // nlohmann keeps the last one
    }
    return escape_token(name_);
  }

  std::string pointer_to(std::string_view last) const {
    std::string out;
    for (std::size_t i = 1; i < stack_.size(); ++i) out += "/" + stack_[i].token;
    return out + "/" + escape_token(last);
  }

  std::string_view t_;
  JsonLocations& out_;
  std::size_t pos_ = 0;
  std::vector<Frame> stack_;
  std::string name_;  // the key just read
};

JsonLocations JsonLocations::scan(std::string_view text) {
  JsonLocations out;
  // nlohmann takes a NUL byte for the end of the input (string literals end so): so does this.
  out.complete_ = JsonScanner(text.substr(0, text.find('\0')), out).run();
  return out;
}

const JsonNodeSpan* JsonLocations::find_nearest(std::string_view pointer, bool& exact) const {
  exact = false;
  if (nodes_.empty()) return nullptr;
  auto tokens = pointer_tokens(pointer);
  std::size_t at = 0;
  std::size_t matched = 0;
  if (tokens) {
    for (const auto& token : *tokens) {
      const Node& n = nodes_[at];
      if (auto m = n.members.find(token); m != n.members.end()) {
        at = m->second;
      } else {
        std::size_t index = 0;
        auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), index);
        if (ec != std::errc{} || p != token.data() + token.size() || index >= n.items.size()) break;
        at = n.items[index];
      }
      ++matched;
    }
    exact = matched == tokens->size();
  }
  return &nodes_[at].span;
}

const JsonNodeSpan* JsonLocations::find(std::string_view pointer) const {
  bool exact = false;
  const JsonNodeSpan* node = find_nearest(pointer, exact);
  return exact ? node : nullptr;
}

std::optional<ByteSpan> JsonLocations::first_scalar(std::string_view text, std::string_view token) const {
  for (const auto& n : nodes_) {  // nodes are kept in text order
    ByteSpan v = n.span.value;
    if (v.end <= text.size() && text.substr(v.begin, v.end - v.begin) == token) return v;
  }
  return std::nullopt;
}

std::vector<std::string> JsonLocations::top_level_keys() const {
  std::vector<std::string> out;
  if (!nodes_.empty())
    for (const auto& [k, _] : nodes_[0].members) out.push_back(k);
  return out;
}

namespace {

std::string clean_parse_message(std::string what) {
  // "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error ..." -> "syntax error ..."
  if (auto p = what.find("syntax error"); p != std::string::npos) what.erase(0, p);
  // The echo of the text read ("; last read: '...'") repeats what the editor shows.
  if (auto p = what.find("; last read: '"); p != std::string::npos) {
    auto expected = what.rfind("'; expected ");
    what.erase(p, expected != std::string::npos && expected > p ? expected + 1 - p : std::string::npos);
  }
  return what;
}

// The opening quote of the string token whose closing quote is at `close`.
std::size_t string_start(std::string_view text, std::size_t close) {
  for (std::size_t i = close; i-- > 0;) {
    if (text[i] != '"') continue;
    std::size_t slashes = 0;
    while (slashes < i && text[i - 1 - slashes] == '\\') ++slashes;
    if (slashes % 2 == 0) return i;
  }
  return close;
}

// nlohmann's byte count includes the byte it stopped on: for "unexpected <token>" the token's
// last byte, for "invalid literal/number" the byte that broke the token ("tru}": the '}').
ByteSpan syntax_error_span(std::string_view text, std::size_t byte, std::string_view message) {
  std::size_t at = std::min(byte > 0 ? byte - 1 : 0, text.size());
  auto says = [&](std::string_view what) { return message.find(what) != std::string_view::npos; };
  if (at < text.size() && says("unexpected string literal")) return {string_start(text, at), at + 1};
  if (at < text.size() && (says("unexpected number literal") || says("unexpected true literal") ||
                           says("unexpected false literal") || says("unexpected null literal"))) {
    std::size_t begin = at;
    while (begin > 0 && !ends_scalar(text[begin - 1])) --begin;
    return {begin, at + 1};
  }
  std::size_t begin = at;
  if (says("invalid literal") || says("invalid number"))  // marked from the token's first character
    while (begin > 0 && !ends_scalar(text[begin - 1])) --begin;
  if (begin < at) return {begin, at};
  if (at < text.size() && text[at] != '\n' && text[at] != '\r') return {at, at + utf8_sequence_length(text, at)};
  return {at, at};
}

}  // namespace

std::expected<LocatedJson, JsonSyntaxError> parse_located(std::string_view text) {
  LocatedJson out;
  auto parsed = protocol::parse_json_text(text);
  if (!parsed) {
    const protocol::JsonParseError& e = parsed.error();
    if (e.kind == protocol::JsonParseErrorKind::out_of_range) {
      // 406, "number overflow parsing '1e400'": valid JSON a double cannot hold. nlohmann stops
      // after the number, so its place is the first scalar spelled that way.
      const std::string& what = e.message;
      auto open = what.find('\''), close = what.rfind('\'');
      std::string token = open < close && close != std::string::npos ? what.substr(open + 1, close - open - 1) : "";
      auto span = JsonLocations::scan(text).first_scalar(text, token).value_or(ByteSpan{0, 0});
      return std::unexpected(JsonSyntaxError{span, "number out of range: " + token + " is too large for a double"});
    }
    if (e.kind == protocol::JsonParseErrorKind::too_deep)  // on the first bracket past the limit
      return std::unexpected(JsonSyntaxError{{e.offset, std::min(e.offset + 1, text.size())}, e.message});
    std::string message = clean_parse_message(e.message);
    return std::unexpected(JsonSyntaxError{syntax_error_span(text, e.offset + 1, message), message});
  }
  out.value = std::move(*parsed);
  out.locations = JsonLocations::scan(text);
  return out;
}

ByteSpan mark_span(const JsonLocations& locations, std::string_view text, std::string_view pointer, Mark mark) {
  bool exact = false;
  const JsonNodeSpan* node = locations.find_nearest(pointer, exact);
  if (!node) return {0, 0};
  if (!exact) mark = Mark::members;
  auto opening = ByteSpan{node->value.begin, node->value.begin + 1};
  bool container = node->value.end > node->value.begin && (text[node->value.begin] == '{' || text[node->value.begin] == '[');
  switch (mark) {
    case Mark::key:
      return node->key.value_or(node->value);
    case Mark::members:
      return node->key.value_or(container ? opening : node->value);
    case Mark::value: {
      std::string_view v = text.substr(node->value.begin, node->value.end - node->value.begin);
      bool multi_line = v.find_first_of("\r\n") != std::string_view::npos;
      if (container && multi_line) return node->key.value_or(opening);
      return node->value;
    }
  }
  return node->value;
}

}  // namespace ferry::diagnostics
