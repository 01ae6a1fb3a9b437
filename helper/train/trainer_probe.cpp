// See trainer_probe.hpp.
#include "helper/train/trainer_probe.hpp"

#include <cctype>
#include <sstream>

namespace ferry::training {

namespace {

// What `export NAME=...` takes as a name: anything else would be shell syntax.
bool is_env_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

}  // namespace

std::expected<std::string, std::string> trainer_env_prelude(const std::string& interpreter,
                                                            const std::map<std::string, std::string>& env) {
  auto words = protocol::interpreter_words(interpreter);
  if (!words) return std::unexpected("ferry.json /interpreter: " + words.error());
  std::string s = "set +e\n";
  for (const auto& [k, v] : env) {
    if (!is_env_name(k)) return std::unexpected("ferry.json /env: \"" + k + "\" is not a variable name (letters, digits, '_')");
    s += "export " + k + "=" + shell_quote(v) + "\n";
  }
  // The interpreter's words become the positional parameters: "$@" runs them as words, never
  // split or globbed again; a leading ~/ is the box's home.
  s += "set --";
  for (const auto& w : *words) s += " " + protocol::shell_quote_home(w);
  s += "\n";
  s += "PYBIN=$(command -v \"$1\" 2>/dev/null | head -n 1)\n";
  // A venv's or conda's bin holds what `pip install cmake ninja` put there; system dirs are left
  // as PATH has them (a stripped PATH must stay stripped).
  s += "case \"$PYBIN\" in /usr/bin/*|/bin/*|/usr/local/bin/*|'') ;; *) PATH=\"$(dirname \"$PYBIN\"):$PATH\" ;; esac\n";
  s += "PATH=\"$PATH:$HOME/.local/bin\"; export PATH\n";
  s += "C=\"${FERRY_TRAIN_CACHE:-$HOME/.cache/ferry/train}\"\n";
  return s;
}

std::expected<std::string, std::string> trainer_probe_script(const std::string& interpreter, const std::string& key,
                                                             const std::map<std::string, std::string>& env) {
  auto prelude = trainer_env_prelude(interpreter, env);
  if (!prelude) return prelude;
  std::string s = std::move(*prelude);
  s += "H=" + shell_quote(key) + "\n";
  s += R"SH(echo "home=$HOME"; echo "cache=$C"; echo "python=$PYBIN"
TV= TP= TS= TD=
T=$("$@" -c 'import os,torch;print(torch.__version__);print(torch.utils.cmake_prefix_path);print(os.path.dirname(torch.__file__))' 2>/dev/null)
if [ -n "$T" ]; then
  PTV=$(echo "$T" | sed -n 1p); PP=$(echo "$T" | sed -n 2p); TD=$(echo "$T" | sed -n 3p)
  echo "python_torch=$PTV"
  if [ -f "$PP/Torch/TorchConfig.cmake" ]; then TV=$PTV TP=$PP TS=python; fi
fi
if [ -z "$TP" ]; then
  for d in ${LIBTORCH:+"$LIBTORCH/share/cmake"} /usr/lib/*/cmake /usr/lib/cmake /usr/share/cmake /usr/local/lib/cmake /usr/local/share/cmake /opt/libtorch/share/cmake; do
    if [ -f "$d/Torch/TorchConfig.cmake" ]; then
      TP=$d TS=system TV=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")/\1/p' "$d/Torch/TorchConfigVersion.cmake" 2>/dev/null | head -n 1)
      [ -n "$TV" ] || TV=unknown
      break
    fi
  done
fi
echo "torch_version=$TV"; echo "torch_prefix=$TP"; echo "torch_source=$TS"
if [ -n "$TV" ] && [ -x "$C/$H-$TV/ferry-train" ]; then
  echo "ready=$C/$H-$TV/ferry-train"
  echo "version=$(cat "$C/$H-$TV/version.txt" 2>/dev/null)"
  exit 0
fi
for h in ${TD:+"$TD/include"} ${TP:+"$TP/../../include"} ${LIBTORCH:+"$LIBTORCH/include"} /usr/include /usr/local/include; do
  if [ -f "$h/torch/csrc/api/include/torch/torch.h" ]; then echo "torch_headers=$h"; break; fi
done
X=${CXX:-}
if [ -z "$X" ]; then for c in c++ g++ clang++; do if command -v $c >/dev/null 2>&1; then X=$c; break; fi; done; fi
if [ -n "$X" ] && command -v $X >/dev/null 2>&1; then
  echo "cxx=$(command -v $X)"; echo "cxx_version=$($X --version 2>/dev/null | head -n 1)"
  # Built and linked as the pack uses C++17: g++ 8 compiles it but links std::filesystem only with
  # -lstdc++fs, which the pack does not pass.
  T="${TMPDIR:-/tmp}/ferry-cxx17.$$"
  if mkdir -m 700 "$T" 2>/dev/null; then
    printf '%s\n' '#include <charconv>' '#include <filesystem>' '#include <optional>' '#include <string_view>' \
      '#include <variant>' 'int main(int argc, char** argv) {' '  std::optional<std::string_view> name{argv[0]};' \
      '  std::variant<int, double> v{argc};' '  auto [a, b] = std::pair<int, int>{std::get<int>(v), 0};' \
      '  return std::filesystem::exists(std::filesystem::path(std::string(*name))) ? a + b : 1;' '}' |
      $X -std=c++17 -x c++ - -o "$T/probe" >/dev/null 2>&1 && echo "cxx17=yes"
    rm -rf "$T"
  fi
fi
if command -v cmake >/dev/null 2>&1; then echo "cmake=$(command -v cmake)"; echo "cmake_version=$(cmake --version | head -n 1)"; fi
[ -f "$C/packs/$H.tar.gz" ] && echo "have_pack=yes"
exit 0
)SH";
  return s;
}

TrainerProbe parse_trainer_probe(std::string_view output) {
  TrainerProbe p;
  std::map<std::string_view, std::string*> fields{
      {"home", &p.home},         {"cache", &p.cache},
      {"python", &p.python},     {"python_torch", &p.python_torch},
      {"torch_version", &p.torch_version}, {"torch_prefix", &p.torch_prefix},
      {"torch_source", &p.torch_source},   {"torch_headers", &p.torch_headers},
      {"cxx", &p.cxx},           {"cxx_version", &p.cxx_version},
      {"cmake", &p.cmake},       {"cmake_version", &p.cmake_version},
      {"ready", &p.ready},       {"version", &p.version}};
  while (!output.empty()) {
    const auto nl = output.find('\n');
    std::string_view line = output.substr(0, nl);
    output = nl == std::string_view::npos ? std::string_view() : output.substr(nl + 1);
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) continue;  // login noise
    const std::string_view key = line.substr(0, eq), value = line.substr(eq + 1);
    if (auto it = fields.find(key); it != fields.end()) *it->second = std::string(value);
    else if (key == "cxx17") p.cxx17 = value == "yes";
    else if (key == "have_pack") p.have_pack = value == "yes";
  }
  return p;
}

std::optional<std::string> trainer_probe_problem(const TrainerProbe& p, const std::string& interpreter) {
  if (!p.ready.empty()) return std::nullopt;
  const std::string py = p.python.empty() ? interpreter : p.python;
  if (p.torch_version.empty()) {
    if (!p.python_torch.empty())
      return "torch " + p.python_torch + " for " + py + " has no C++ CMake files (" + "torch.utils.cmake_prefix_path has no Torch/TorchConfig.cmake) and the box has no system LibTorch: "
             "install a torch wheel (`" + py + " -m pip install torch`, the wheels carry LibTorch) or a LibTorch (apt install libtorch-dev, or unpack libtorch and set LIBTORCH in ferry.json's env)";
    if (p.python.empty())
      return "no interpreter `" + interpreter + "` on the box and no system LibTorch to build ferry-train against: "
             "set ferry.json's interpreter to a Python with torch, or install one (`python3 -m pip install torch`)";
    return "no torch for " + py + " and no system LibTorch to build ferry-train against: `" + py +
           " -m pip install torch` (or set ferry.json's interpreter to the Python that has torch)";
  }
  if (p.torch_headers.empty())
    return "torch " + p.torch_version + " on the box (" + p.torch_prefix + ") lacks its C++ headers (torch/torch.h): "
           "reinstall the torch wheel (`" + py + " -m pip install --force-reinstall torch`) or install libtorch-dev";
  if (p.cxx.empty())
    return "no C++ compiler on the box to build ferry-train (PATH has no c++, g++ or clang++): "
           "`sudo apt install g++` (g++ 9 or newer), or `conda install -c conda-forge gxx` without root; or set CXX in ferry.json's env";
  if (!p.cxx17)
    return "the box's C++ compiler (" + (p.cxx_version.empty() ? p.cxx : p.cxx_version) + ") cannot build ferry-train, which "
           "needs a C++17 compiler (g++ 9 or later, clang 10 or later): install one (`sudo apt install g++-9`, or "
           "`conda install -c conda-forge gxx` without root) and set CXX in ferry.json's env";
  if (p.cmake.empty())
    return "no CMake on the box to build ferry-train: `" + py + " -m pip install cmake ninja` (works without root; ~/.local/bin and the venv's bin are searched)";
  return std::nullopt;
}

}  // namespace ferry::training
