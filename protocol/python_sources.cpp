// The env mirror's file filter: see python_sources.hpp.
#include "protocol/python_sources.hpp"

namespace ferry::protocol {

namespace {

std::string_view last_component(std::string_view p) {
  const auto slash = p.rfind('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

bool is_metadata_dir(std::string_view name) { return name.ends_with(".dist-info") || name.ends_with(".egg-info"); }

}  // namespace

bool is_python_source_file(std::string_view p) {
  if (p.empty() || p.starts_with('/') || p.ends_with('/')) return false;
  const std::string_view name = last_component(p);
  if (name.starts_with(".ferry-tmp.")) return false;
  if (name.ends_with(".py") || name.ends_with(".pyi") || name == "py.typed") return true;
  // Debian and old setuptools install PKG-INFO as a single file named *.egg-info.
  if (is_metadata_dir(name) && p.find('/') == std::string_view::npos) return true;
  // Anything in a top-level metadata directory (METADATA, RECORD, top_level.txt, ...), but not
  // what sits below a second level (licenses/ can hold many files; they are small, keep them).
  const auto slash = p.find('/');
  return slash != std::string_view::npos && is_metadata_dir(p.substr(0, slash));
}

bool is_python_source_pruned_dir(std::string_view p) {
  const std::string_view name = last_component(p);
  return name == "__pycache__" || name.starts_with(".ferry-tmp.");
}

std::string_view python_package_of(std::string_view p) {
  std::string_view first = p.substr(0, p.find('/'));
  if (is_metadata_dir(first)) {
    first.remove_suffix(first.ends_with(".dist-info") ? 10 : 9);
    // "NAME-VERSION": the name never holds '-' in a wheel's dist-info (PEP 427 escapes it).
    if (auto dash = first.find('-'); dash != std::string_view::npos) first = first.substr(0, dash);
    return first;
  }
  if (first.ends_with(".pyi")) first.remove_suffix(4);
  else if (first.ends_with(".py")) first.remove_suffix(3);
  return first;
}

}  // namespace ferry::protocol
