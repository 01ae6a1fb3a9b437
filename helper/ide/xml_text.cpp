// xml_text: a recursive-descent reader that keeps byte spans, and text edits built on it.
#include "helper/ide/xml_text.hpp"

#include <algorithm>
#include <cstdint>

namespace ferry::ide {

namespace {

constexpr int kMaxDepth = 64;  // IDE files nest a few levels; a hostile file must not blow the stack

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool name_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.' || c == ':';
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// "&amp;" and friends in `raw` decoded; nullopt for an entity the reader does not know.
std::optional<std::string> unescape(std::string_view raw) {
  std::string out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '&') {
      out += raw[i];
      continue;
    }
    const std::size_t semi = raw.find(';', i);
    if (semi == std::string_view::npos) return std::nullopt;
    const std::string_view name = raw.substr(i + 1, semi - i - 1);
    if (name == "amp") out += '&';
    else if (name == "lt") out += '<';
    else if (name == "gt") out += '>';
    else if (name == "quot") out += '"';
    else if (name == "apos") out += '\'';
    else if (name.size() > 1 && name[0] == '#') {
      const bool hex = name[1] == 'x';
      const std::string digits(name.substr(hex ? 2 : 1));
      if (digits.empty() || digits.size() > 8 ||
          digits.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789") != std::string::npos)
        return std::nullopt;
      const unsigned long cp = std::stoul(digits, nullptr, hex ? 16 : 10);
      if (cp == 0 || cp > 0x10FFFF) return std::nullopt;
      append_utf8(out, static_cast<std::uint32_t>(cp));
    } else {
      return std::nullopt;
    }
    i = semi;
  }
  return out;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : t_(text) {}

  std::expected<XmlElement, std::string> document() {
    if (!misc()) return std::unexpected(error_);
    XmlElement root;
    if (i_ >= t_.size() || t_[i_] != '<') return fail("no root element");
    if (!element(root, 0) || !misc()) return std::unexpected(error_);
    if (i_ != t_.size()) return fail("text after the root element");
    return root;
  }

 private:
  std::unexpected<std::string> fail(const std::string& what) {
    if (error_.empty()) {
      const auto line = 1 + std::count(t_.begin(), t_.begin() + static_cast<std::ptrdiff_t>(std::min(i_, t_.size())), '\n');
      error_ = what + " (line " + std::to_string(line) + ")";
    }
    return std::unexpected(error_);
  }
  bool bad(const std::string& what) {
    (void)fail(what);
    return false;
  }

  bool starts(std::string_view s) const { return t_.substr(i_).starts_with(s); }

  // Skips to one past `end`; false when it never comes.
  bool skip_past(std::string_view end, const char* what) {
    const std::size_t at = t_.find(end, i_);
    if (at == std::string_view::npos) return bad(std::string("unterminated ") + what);
    i_ = at + end.size();
    return true;
  }

  // Whitespace, comments, processing instructions and a DOCTYPE, around the root.
  bool misc() {
    for (;;) {
      while (i_ < t_.size() && blank(t_[i_])) ++i_;
      if (starts("<!--")) {
        if (!skip_past("-->", "comment")) return false;
      } else if (starts("<?")) {
        if (!skip_past("?>", "processing instruction")) return false;
      } else if (starts("<!DOCTYPE")) {
        if (!skip_past(">", "DOCTYPE")) return false;
      } else {
        return true;
      }
    }
  }

  bool name(std::string& out) {
    const std::size_t start = i_;
    while (i_ < t_.size() && name_char(t_[i_])) ++i_;
    if (i_ == start) return bad("expected a name");
    out = std::string(t_.substr(start, i_ - start));
    return true;
  }

  bool attributes(XmlElement& e) {
    for (;;) {
      const std::size_t before = i_;
      while (i_ < t_.size() && blank(t_[i_])) ++i_;
      if (i_ >= t_.size()) return bad("unterminated tag <" + e.tag);
      if (t_[i_] == '>' || starts("/>")) return true;
      if (i_ == before) return bad("expected a blank before an attribute");
      std::string key;
      if (!name(key)) return false;
      while (i_ < t_.size() && blank(t_[i_])) ++i_;
      if (i_ >= t_.size() || t_[i_] != '=') return bad("expected '=' after " + key);
      ++i_;
      while (i_ < t_.size() && blank(t_[i_])) ++i_;
      if (i_ >= t_.size() || (t_[i_] != '"' && t_[i_] != '\'')) return bad("expected a quoted value for " + key);
      const char quote = t_[i_++];
      const std::size_t close = t_.find(quote, i_);
      if (close == std::string_view::npos) return bad("unterminated value of " + key);
      const std::string_view raw = t_.substr(i_, close - i_);
      if (raw.find('<') != std::string_view::npos) return bad("'<' in the value of " + key);
      auto value = unescape(raw);
      if (!value) return bad("unknown entity in the value of " + key);
      for (const auto& [k, v] : e.attributes)
        if (k == key) return bad("attribute " + key + " twice");
      e.attributes.emplace_back(std::move(key), std::move(*value));
      i_ = close + 1;
    }
  }

  bool element(XmlElement& e, int depth) {
    if (depth > kMaxDepth) return bad("elements nested too deep");
    e.begin = i_++;
    if (!name(e.tag) || !attributes(e)) return false;
    if (starts("/>")) {
      i_ += 2;
      e.self_closing = true;
      e.end = e.content_begin = e.content_end = i_;
      return true;
    }
    e.content_begin = ++i_;
    std::string text;
    for (;;) {
      if (i_ >= t_.size()) return bad("no closing tag for <" + e.tag + ">");
      if (starts("</")) break;
      if (starts("<!--")) {
        if (!skip_past("-->", "comment")) return false;
      } else if (starts("<![CDATA[")) {
        const std::size_t start = i_ + 9;
        if (!skip_past("]]>", "CDATA section")) return false;
        text += t_.substr(start, i_ - 3 - start);
      } else if (starts("<?")) {
        if (!skip_past("?>", "processing instruction")) return false;
      } else if (t_[i_] == '<') {
        XmlElement child;
        if (!element(child, depth + 1)) return false;
        e.children.push_back(std::move(child));
      } else {
        const std::size_t next = std::min(t_.find('<', i_), t_.size());
        auto chunk = unescape(t_.substr(i_, next - i_));
        if (!chunk) return bad("unknown entity in the text of <" + e.tag + ">");
        text += *chunk;
        i_ = next;
      }
    }
    e.content_end = i_;
    i_ += 2;
    std::string closing;
    if (!name(closing)) return false;
    if (closing != e.tag) return bad("</" + closing + "> closes <" + e.tag + ">");
    while (i_ < t_.size() && blank(t_[i_])) ++i_;
    if (i_ >= t_.size() || t_[i_] != '>') return bad("unterminated closing tag </" + e.tag);
    e.end = ++i_;
    const auto first = text.find_first_not_of(" \t\r\n");
    e.text = first == std::string::npos ? "" : text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
    return true;
  }

  std::string_view t_;
  std::size_t i_ = 0;
  std::string error_;
};

// The blanks a line starts with, for the line holding `pos`.
std::string line_indent(std::string_view t, std::size_t pos) {
  std::size_t start = pos == 0 ? 0 : t.rfind('\n', pos - 1);
  start = start == std::string_view::npos || pos == 0 ? 0 : start + 1;
  std::size_t end = start;
  while (end < t.size() && (t[end] == ' ' || t[end] == '\t')) ++end;
  return std::string(t.substr(start, end - start));
}

std::string indented(std::string_view text, const std::string& base) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += base;
  }
  return out;
}

bool matches(const XmlElement& e, const XmlStep& step) {
  if (e.tag != step.tag) return false;
  for (const auto& [k, v] : step.attributes) {
    const std::string* have = e.attribute(k);
    if (!have || *have != v) return false;
  }
  return true;
}

std::string start_tag(const XmlStep& step) {
  std::string s = "<" + step.tag;
  for (const auto& [k, v] : step.attributes) s.append(" ").append(k).append("=\"").append(xml_escape(v)).append("\"");
  return s + ">";
}

// Steps path[from..] wrapped around `inner` (already indented for the innermost level), at `base`.
std::string wrap(const std::vector<XmlStep>& path, std::size_t from, const std::string& inner, const std::string& base) {
  if (from == path.size()) return inner;
  const std::string child_base = base + "  ";
  std::string s = start_tag(path[from]);
  s.append("\n").append(child_base).append(wrap(path, from + 1, inner, child_base)).append("\n").append(base);
  return s + "</" + path[from].tag + ">";
}

std::string children_text(const std::vector<XmlChild>& children, const std::string& base) {
  std::string s;
  for (std::size_t i = 0; i < children.size(); ++i) {
    if (i) s.append("\n").append(base);
    s += indented(children[i].text, base);
  }
  return s;
}

struct Edit {
  std::size_t pos = 0, len = 0;
  std::string text;
};

XmlMerge new_file(const XmlMergeRequest& r) {
  XmlMerge out;
  for (const auto& c : r.children) out.added.push_back(c.key);
  const std::string body = wrap(r.path, 0, children_text(r.children, std::string(2 * r.path.size(), ' ')), "");
  out.text = (r.prolog ? "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" : "") + body + "\n";
  return out;
}

// Each of the container's children with a key ours has: replaced where it stands unless it means
// the same already. Returns ours that found no child, to append.
std::expected<std::vector<XmlChild>, std::string> replace_known(std::string_view existing, const XmlElement& container,
                                                                const XmlMergeRequest& r, XmlMerge& out, std::vector<Edit>& edits) {
  std::vector<bool> placed(r.children.size(), false);
  for (const auto& child : container.children) {
    const auto key = r.key_of(child);
    if (!key) continue;
    out.existing_keys.push_back(*key);
    for (std::size_t k = 0; k < r.children.size(); ++k) {
      if (placed[k] || r.children[k].key != *key) continue;
      placed[k] = true;
      auto wanted = parse_xml(r.children[k].text);
      if (!wanted) return std::unexpected("ferry's own element for " + *key + " is not XML: " + wanted.error());
      if (canonical(*wanted) == canonical(child)) {
        out.unchanged.push_back(*key);
      } else {
        edits.push_back({child.begin, child.end - child.begin, indented(r.children[k].text, line_indent(existing, child.begin))});
        out.replaced.push_back(*key);
      }
      break;
    }
  }
  std::vector<XmlChild> left;
  for (std::size_t k = 0; k < r.children.size(); ++k)
    if (!placed[k]) left.push_back(r.children[k]);
  return left;
}

// The edit that puts `to_add` at the end of `container` (which is path[depth - 1]), inside the
// steps path[depth..] that do not exist yet; a self-closing container is opened.
Edit append_children(std::string_view existing, const XmlElement& container, const std::vector<XmlStep>& path,
                     std::size_t depth, const std::vector<XmlChild>& to_add) {
  const std::string container_indent = line_indent(existing, container.begin);
  const bool complete = depth == path.size();
  const std::string base = complete && !container.children.empty() ? line_indent(existing, container.children.back().begin)
                                                                    : container_indent + "  ";
  const std::string inner_base = base + std::string(2 * (path.size() - depth), ' ');
  const std::string inner = wrap(path, depth, children_text(to_add, inner_base), base);
  if (container.self_closing) {
    std::string open(existing.substr(container.begin, container.end - container.begin - 2));
    while (!open.empty() && blank(open.back())) open.pop_back();
    return {container.begin, container.end - container.begin,
            open + ">\n" + base + inner + "\n" + container_indent + "</" + container.tag + ">"};
  }
  std::size_t after = container.content_end;
  while (after > container.content_begin && blank(existing[after - 1])) --after;
  std::string insert = "\n" + base + inner;
  if (existing.substr(after, container.content_end - after).find('\n') == std::string_view::npos)
    insert.append("\n").append(container_indent);  // the closing tag gets its own line
  return {after, 0, std::move(insert)};
}

}  // namespace

const std::string* XmlElement::attribute(std::string_view name) const {
  for (const auto& [k, v] : attributes)
    if (k == name) return &v;
  return nullptr;
}

std::expected<XmlElement, std::string> parse_xml(std::string_view text) { return Parser(text).document(); }

std::string xml_escape(std::string_view value) {
  std::string out;
  for (char c : value) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\n': out += "&#10;"; break;
      case '\r': out += "&#13;"; break;
      case '\t': out += "&#9;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string canonical(const XmlElement& e) {
  auto attrs = e.attributes;
  std::sort(attrs.begin(), attrs.end());
  std::string s = "<" + e.tag;
  for (const auto& [k, v] : attrs) s.append(" ").append(k).append("=\"").append(xml_escape(v)).append("\"");
  s += ">";
  for (const auto& c : e.children) s += canonical(c);
  return s + xml_escape(e.text) + "</" + e.tag + ">";
}

std::expected<XmlMerge, std::string> merge_xml_children(std::string_view existing, const XmlMergeRequest& r) {
  if (r.path.empty()) return std::unexpected("no container path");
  if (existing.find_first_not_of(" \t\r\n") == std::string_view::npos) return new_file(r);
  auto root = parse_xml(existing);
  if (!root) return std::unexpected("it is not XML that ferry can read: " + root.error() + "; it was left as it is");
  if (!matches(*root, r.path[0]))
    return std::unexpected("its root element is <" + root->tag + ">, not " + start_tag(r.path[0]) + "; it was left as it is");

  // Down the path as far as it exists.
  const XmlElement* container = &*root;
  std::size_t depth = 1;
  for (; depth < r.path.size(); ++depth) {
    auto it = std::find_if(container->children.begin(), container->children.end(),
                           [&](const XmlElement& c) { return matches(c, r.path[depth]); });
    if (it == container->children.end()) break;
    container = &*it;
  }
  XmlMerge out;
  std::vector<Edit> edits;
  std::vector<XmlChild> to_add = r.children;
  if (depth == r.path.size()) {
    auto left = replace_known(existing, *container, r, out, edits);
    if (!left) return std::unexpected(left.error());
    to_add = std::move(*left);
  }
  for (const auto& c : to_add) out.added.push_back(c.key);
  if (!to_add.empty()) edits.push_back(append_children(existing, *container, r.path, depth, to_add));
  std::stable_sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.pos > b.pos; });
  out.text = std::string(existing);
  for (const auto& e : edits) out.text.replace(e.pos, e.len, e.text);
  return out;
}

}  // namespace ferry::ide
