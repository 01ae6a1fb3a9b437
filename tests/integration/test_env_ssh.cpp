// `ferry env` and `ferry env sync` over the real sshd fixture, whose /usr/bin/python3 has torch:
// the mirror holds torch's Python sources and no compiled extension; the project venv's python
// finds torch there and fails to import it (no binaries), while jedi resolves torch.nn.Linear to a
// file in the mirror; a second sync after one package file changed on the box moves only that
// file, a file removed on the box leaves the mirror; the size cap holds and names what it left out.
// `ferry serve` answers env/info and env/sync on its one link, and refreshes the mirror in the
// background after a connect, and after a run ends, when the box's installed packages changed.
#define BOOST_TEST_MODULE env_ssh
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/serve_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

using ferry::test::SshdFixture;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using Run = ferry::test::ShellRun;

// A shell command with stdin closed; stderr joins stdout when `join`.
Run sh(const std::string& cmd, bool join = true) {
  return ferry::test::run_shell(cmd + " </dev/null" + (join ? " 2>&1" : ""));
}

// Appended, not '+': GCC 12 warns -Wrestrict (falsely) on "'" + string.
std::string q(const fs::path& p) {
  std::string quoted(1, '\'');
  return quoted.append(p.string()).append(1, '\'');
}

// The fixture's box with an extra package dir on the interpreter's path (~/extra, through a
// wrapper ~/py), which the test may change as `pip install -U` would.
struct Box {
  SshdFixture sshd;
  ferry::test::TempDir dir{"ferry-env-ssh"};
  fs::path project() const { return dir / "proj"; }
  fs::path cache() const { return dir / "cache"; }
  fs::path extra() const { return sshd.home() / "extra"; }
  Box() {
    sshd.trust_host_key();
    ferry::test::write_file(extra() / "mypkg" / "__init__.py", "from .core import answer\n");
    ferry::test::write_file(extra() / "mypkg" / "core.py", "def answer():\n    return 42\n");
    ferry::test::write_file(extra() / "mypkg" / "old.py", "OLD = 1\n");
    ferry::test::write_file(extra() / "mypkg" / "fast.cpython-311-x86_64-linux-gnu.so", std::string(4096, 'x'));
    ferry::test::write_file(extra() / "mypkg" / "data.bin", std::string(4096, 'd'));
    ferry::test::write_file(sshd.home() / "py", "#!/bin/sh\nPYTHONPATH=\"$HOME/extra\" exec /usr/bin/python3 \"$@\"\n");
    fs::permissions(sshd.home() / "py", fs::perms::owner_all);
    json cfg{{"name", "envproj"},
             {"host", sshd.alias()},
             {"sshConfig", sshd.ssh_config().string()},
             {"interpreter", "~/py"},
             {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}};
    ferry::test::write_file(project() / "ferry.json", cfg.dump());
  }
  Run ferry(const std::string& args, bool join = true) const {
    return sh("cd " + q(project()) + " && XDG_CACHE_HOME=" + q(cache()) + " '" FERRY_BIN "' " + args, join);
  }
};

std::size_t count_with_suffix(const fs::path& dir, const std::string& suffix) {
  std::size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename().string().ends_with(suffix)) ++n;
  return n;
}

std::string entry_for(const json& report, const std::string& remote) {
  for (const auto& e : report["entries"])
    if (e["remote"] == remote) return e["local"].get<std::string>();
  return {};
}

}  // namespace

BOOST_AUTO_TEST_CASE(env_info_table_and_json) {
  Box box;
  auto table = box.ferry("env");
  BOOST_TEST_REQUIRE(table.status == 0, table.out);
  BOOST_TEST(table.out.find("python        CPython 3.") != std::string::npos, table.out);
  BOOST_TEST(table.out.find("/usr/lib/python3/dist-packages") != std::string::npos, table.out);
  auto j = box.ferry("env --json", false);
  BOOST_TEST_REQUIRE(j.status == 0, j.out);
  auto info = json::parse(j.out);
  BOOST_TEST(info["torch"].is_string(), info.dump());  // the fixture's python has torch
  bool has_torch_dist = false, has_extra = false;
  for (const auto& d : info["distributions"]) has_torch_dist = has_torch_dist || d["name"] == "torch";
  for (const auto& p : info["sysPath"]) has_extra = has_extra || (p["path"] == box.extra().string() && p["kind"] == "site");
  BOOST_TEST(has_torch_dist);
  BOOST_TEST(has_extra, info["sysPath"].dump());

  // An interpreter that is not there: a clear error naming the fix.
  ferry::test::write_file(box.project() / "ferry.json",
                          json{{"host", box.sshd.alias()}, {"sshConfig", box.sshd.ssh_config().string()},
                               {"interpreter", "/nonexistent/python"}, {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}}
                              .dump());
  auto missing = box.ferry("env");
  BOOST_TEST(missing.status == 2);  // invalid_project: the fix is in ferry.json (exit_codes.hpp)
  BOOST_TEST(missing.out.find("set \"interpreter\" in ferry.json") != std::string::npos, missing.out);
}

BOOST_AUTO_TEST_CASE(mirror_venv_jedi_incremental_and_cap) {
  Box box;
  BOOST_TEST_REQUIRE(sh("python3 -c 'import torch'").status != 0, "the local python3 must not have torch for this test");
  auto first = box.ferry("env sync --json", false);
  BOOST_TEST_REQUIRE(first.status == 0, first.out);
  auto r1 = json::parse(first.out);
  const fs::path dist = entry_for(r1, "/usr/lib/python3/dist-packages");
  const fs::path extra = entry_for(r1, box.extra().string());
  BOOST_TEST_REQUIRE(!dist.empty(), r1.dump());
  BOOST_TEST_REQUIRE(!extra.empty(), r1.dump());
  BOOST_TEST(dist.string().starts_with(box.cache().string()));  // outside the project
  BOOST_TEST(fs::is_regular_file(dist / "torch" / "__init__.py"));
  BOOST_TEST(fs::is_regular_file(dist / "torch" / "nn" / "modules" / "linear.py"));
  BOOST_TEST(count_with_suffix(box.cache(), ".so") == 0u);
  BOOST_TEST(count_with_suffix(box.cache(), ".pyc") == 0u);
  BOOST_TEST(fs::is_regular_file(extra / "mypkg" / "core.py"));
  BOOST_TEST(!fs::exists(extra / "mypkg" / "data.bin"));
  BOOST_TEST(r1["filesReceived"].get<int>() > 1000);
  BOOST_TEST(r1["leftOut"].empty());
  BOOST_TEST_MESSAGE("first env sync: " << r1["filesReceived"] << " files, " << r1["bytesOnWire"] << " bytes on the wire, "
                                         << r1["seconds"] << " s");
  // Nothing was written on the box: the stdlib entry is not mirrored either.
  BOOST_TEST(entry_for(r1, "/usr/lib/python3.11").empty());

  // The venv: no torch binaries, so `import torch` fails inside the mirror's torch/__init__.py.
  const fs::path venv_python = box.project() / ".ferry" / "venv" / "bin" / "python";
  BOOST_TEST_REQUIRE(r1["venvPython"] == venv_python.string(), r1.dump());
  auto imp = sh(q(venv_python) + " -c 'import torch'");
  BOOST_TEST(imp.status != 0);
  BOOST_TEST(imp.out.find((dist / "torch" / "__init__.py").string()) != std::string::npos, imp.out);
  BOOST_TEST(imp.out.find("No module named 'torch'") == std::string::npos, imp.out);
  auto pure = sh(q(venv_python) + " -c 'import mypkg; print(mypkg.answer())'");
  BOOST_TEST(pure.out == "42\n", pure.out);

  // jedi (Debian's python3-jedi) with the venv as its environment resolves torch.nn.Linear.
  const std::string script = "import jedi\n"
                             "env = jedi.create_environment('" + (box.project() / ".ferry" / "venv").string() + "', safe=False)\n"
                             "s = jedi.Script('import torch.nn\\ntorch.nn.Linear\\n', environment=env)\n"
                             "print(s.goto(2, 11, follow_imports=True)[0].module_path)\n";
  ferry::test::write_file(box.dir / "jedi_goto.py", script);
  auto goto_linear = sh("/usr/bin/python3 " + q(box.dir / "jedi_goto.py"), false);
  BOOST_TEST(goto_linear.status == 0, goto_linear.out);
  BOOST_TEST(goto_linear.out == (dist / "torch" / "nn" / "modules" / "linear.py").string() + "\n", goto_linear.out);

  // The editors: `ferry ide vscode` merges the one key; `ferry doctor` reports the mirror.
  ferry::test::write_file(box.project() / ".vscode" / "settings.json", "{\n  // mine\n  \"editor.tabSize\": 2\n}\n");
  auto ide = box.ferry("ide vscode --offline");
  BOOST_TEST(ide.status == 0, ide.out);
  auto settings = json::parse(std::ifstream(box.project() / ".vscode" / "settings.json"), nullptr, true, true);
  BOOST_TEST(settings["python.defaultInterpreterPath"] == "${workspaceFolder}/.ferry/venv/bin/python", settings.dump());
  BOOST_TEST(settings["editor.tabSize"] == 2);
  auto doctor = box.ferry("doctor --json", false);
  bool reported = false;
  const json checks = json::parse(doctor.out)["checks"];
  for (const auto& c : checks)
    if (c["check"] == "env mirror") {
      reported = true;
      BOOST_TEST(c["status"] == "pass", c.dump());
      BOOST_TEST(c["detail"].get<std::string>().find("synced ") != std::string::npos, c.dump());
      BOOST_TEST(c["detail"].get<std::string>().find(std::to_string(r1["filesTotal"].get<int>()) + " files") == 0u, c.dump());
    }
  BOOST_TEST(reported, doctor.out);

  // One package file changed on the box (pip install -U), one removed: only they move.
  ferry::test::write_file(box.extra() / "mypkg" / "core.py", "def answer():\n    return 43\n");
  fs::remove(box.extra() / "mypkg" / "old.py");
  auto second = box.ferry("env sync --json", false);
  BOOST_TEST_REQUIRE(second.status == 0, second.out);
  auto r2 = json::parse(second.out);
  BOOST_TEST_MESSAGE("second env sync: " << r2["seconds"] << " s, " << r2["bytesOnWire"] << " bytes on the wire");
  BOOST_TEST(r2["filesReceived"] == 1, r2.dump());
  BOOST_TEST(r2["filesDeleted"] == 1, r2.dump());
  BOOST_TEST(r2["filesUnchanged"].get<int>() > 1000);
  BOOST_TEST(r2["bytesOnWire"].get<std::uint64_t>() < 64u * 1024u);
  BOOST_TEST(!fs::exists(extra / "mypkg" / "old.py"));
  BOOST_TEST(sh(q(venv_python) + " -c 'import mypkg; print(mypkg.answer())'").out == "43\n");

  // The cap: 8 MiB leaves the largest packages (torch among them) out, largest first, and the
  // mirror fits.
  auto capped = box.ferry("env sync --no-venv --json --cap 8388608", false);
  BOOST_TEST_REQUIRE(capped.status == 0, capped.out);
  auto r3 = json::parse(capped.out);
  BOOST_TEST(r3["bytesTotal"].get<std::uint64_t>() <= 8388608u, r3.dump());
  BOOST_TEST_REQUIRE(!r3["leftOut"].empty());
  bool torch_left_out = false;
  for (std::size_t k = 0; k < r3["leftOut"].size(); ++k) {
    torch_left_out = torch_left_out || r3["leftOut"][k]["package"] == "torch";
    if (k > 0) BOOST_TEST(r3["leftOut"][k - 1]["bytes"].get<std::uint64_t>() >= r3["leftOut"][k]["bytes"].get<std::uint64_t>());
  }
  BOOST_TEST(torch_left_out, r3["leftOut"].dump());
  BOOST_TEST(!fs::exists(dist / "torch" / "__init__.py"));
  BOOST_TEST(fs::is_regular_file(extra / "mypkg" / "core.py"));  // small packages stay
  auto text = box.ferry("env sync --no-venv --cap 8388608");
  BOOST_TEST(text.out.find("left out: " + r3["leftOut"][0]["package"].get<std::string>() + " (") != std::string::npos, text.out);
}

BOOST_AUTO_TEST_CASE(serve_env_methods_and_background_refresh) {
  Box box;
  using namespace std::chrono_literals;
  const std::vector<std::string> argv{"/usr/bin/env", "XDG_CACHE_HOME=" + box.cache().string(), FERRY_BIN, "--project",
                                      box.project().string(), "serve"};
  const fs::path venv = box.project() / ".ferry" / "venv";
  fs::path extra_mirror;
  {
    ferry::test::ServeProcess serve(argv);
    BOOST_REQUIRE(serve.call(1, "initialize", {{"capabilities", json::object()}}, 30s));
    auto info = serve.call(2, "env/info", json{{"torch", false}}, 60s);
    BOOST_TEST_REQUIRE(info->contains("result"), info->dump());
    BOOST_TEST((*info)["result"]["python"].get<std::string>().starts_with("3."));
    BOOST_TEST((*info)["result"]["torch"].is_null());  // not asked for
    // A 4 MiB cap keeps this quick: the big packages are listed, named and left out.
    auto synced = serve.call(3, "env/sync", json{{"capBytes", 4 << 20}}, 120s);
    BOOST_TEST_REQUIRE(synced->contains("result"), synced->dump());
    const json& r = (*synced)["result"];
    BOOST_TEST(r["bytesTotal"].get<std::uint64_t>() <= 4u << 20);
    BOOST_TEST(!r["leftOut"].empty());
    BOOST_TEST(r["venvPython"] == (venv / "bin" / "python").string(), r.dump());
    extra_mirror = entry_for(r, box.extra().string());
    BOOST_TEST_REQUIRE(fs::is_regular_file(extra_mirror / "mypkg" / "core.py"));
    auto bad = serve.call(4, "env/sync", json{{"capBytes", 0}}, 30s);
    BOOST_TEST((*bad)["error"]["code"] == -32602, bad->dump());
    BOOST_REQUIRE(serve.call(5, "shutdown", nullptr, 30s));
    serve.send({{"jsonrpc", "2.0"}, {"method", "exit"}});
  }
  // `pip install` on the box: a new distribution. The next connect of a project that uses the
  // mirror (it has .ferry/venv) brings it in without a request.
  ferry::test::write_file(box.extra() / "newpkg-2.0.dist-info" / "METADATA", "Metadata-Version: 2.1\nName: newpkg\nVersion: 2.0\n");
  ferry::test::write_file(box.extra() / "newpkg" / "__init__.py", "NEW = True\n");
  ferry::test::ServeProcess serve(argv);
  BOOST_REQUIRE(serve.call(1, "initialize", {{"capabilities", json::object()}}, 30s));
  auto connected = serve.call(2, "host/connect", json::object(), 60s);
  BOOST_TEST_REQUIRE(connected->contains("result"), connected->dump());
  BOOST_TEST(ferry::test::eventually([&] { return fs::exists(extra_mirror / "newpkg" / "__init__.py"); }, 120s));
  // A run from the editor that installs a package: when it ends, the mirror follows.
  const std::string install =
      "import os, pathlib; e = pathlib.Path(os.environ['HOME']) / 'extra'; "
      "(e / 'runpkg-1.0.dist-info').mkdir(); (e / 'runpkg-1.0.dist-info' / 'METADATA').write_text('Name: runpkg\\nVersion: 1.0\\n'); "
      "(e / 'runpkg').mkdir(); (e / 'runpkg' / '__init__.py').write_text('RUN = 1\\n')";
  auto started = serve.call(3, "run/start", json{{"argv", {"/usr/bin/python3", "-c", install}}}, 60s);
  BOOST_TEST_REQUIRE(started->contains("result"), started->dump());
  BOOST_TEST(ferry::test::eventually([&] { return fs::exists(extra_mirror / "runpkg" / "__init__.py"); }, 120s));
  BOOST_TEST(fs::exists(box.extra() / "runpkg" / "__init__.py"));
  BOOST_REQUIRE(serve.call(4, "shutdown", nullptr, 60s));
  serve.send({{"jsonrpc", "2.0"}, {"method", "exit"}});
}
