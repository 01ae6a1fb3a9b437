// A small XML reader and editor for the IDE's project files (.idea/*.xml, .run/*.run.xml): finds
// elements and their byte spans, so ferry can replace or add its own elements by text edits and
// keep everything else in the file (the user's entries, comments, layout) exactly as it was.
// No DTDs; entities are the five predefined ones and character references.
#pragma once

#include <cstddef>
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferry::ide {

struct XmlElement {
  std::string tag;
  std::vector<std::pair<std::string, std::string>> attributes;  // values unescaped, in file order
  std::size_t begin = 0, end = 0;                  // '<' to one past the closing '>'
  std::size_t content_begin = 0, content_end = 0;  // between the tags (equal for <x/>)
  bool self_closing = false;
  std::string text;                                // character data directly inside, trimmed
  std::vector<XmlElement> children;

  const std::string* attribute(std::string_view name) const;
};

// The root element, or what is wrong with the text (the caller then leaves the file alone).
std::expected<XmlElement, std::string> parse_xml(std::string_view text);

// An attribute value for double quotes: & < > " escaped, tab/newline/CR as character references.
std::string xml_escape(std::string_view value);

// What an element means to the IDE: tag, attributes (in any order), children, trimmed text;
// whitespace between elements and comments do not count.
std::string canonical(const XmlElement& element);

// One step of the path to the element ferry's children go in: a tag and attributes that must
// match (also written when the step has to be created).
struct XmlStep {
  std::string tag;
  std::vector<std::pair<std::string, std::string>> attributes;
};

struct XmlChild {
  std::string key;   // identifies the child among its siblings (see XmlMergeRequest::key_of)
  std::string text;  // the element, continuation lines indented relative to its first line
};

struct XmlMergeRequest {
  std::vector<XmlStep> path;  // path[0] is the root element
  // The key of an existing child of the container, nullopt for children ferry does not know.
  std::function<std::optional<std::string>(const XmlElement&)> key_of;
  std::vector<XmlChild> children;
  bool prolog = false;  // a new file starts with <?xml version="1.0" encoding="UTF-8"?>
};

struct XmlMerge {
  std::string text;
  std::vector<std::string> added, replaced, unchanged;  // keys
  std::vector<std::string> existing_keys;               // keys of the container's children before
};

// Each child replaces the first existing child with its key where it stands (unless it means the
// same already), or is appended to the container; containers on the path that are missing are
// created. `existing` "" (or blank) makes a new file. A file that is not XML, or whose root is
// not path[0], is an error.
std::expected<XmlMerge, std::string> merge_xml_children(std::string_view existing, const XmlMergeRequest& request);

}  // namespace ferry::ide
