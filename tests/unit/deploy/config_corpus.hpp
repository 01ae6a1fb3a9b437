// ferry.json documents shared by the validator tests and the schema-agreement test: good ones,
// and bad ones with the JSON pointer the C++ validator must name.
#pragma once

#include <string_view>
#include <vector>

namespace ferry::test {

struct CorpusEntry {
  std::string_view label;
  std::string_view json;
  std::string_view pointer;  // "" for a good config; else where the first error is
  bool good() const { return label.starts_with("good"); }
};

inline const std::vector<CorpusEntry>& config_corpus() {
  static const std::vector<CorpusEntry> corpus = {
      {"good: empty object (all defaults)", R"({})", ""},
      {"good: host only", R"({"host": "local"})", ""},
      {"good: $schema key for editors", R"({"$schema": "../protocol/spec/ferry.schema.json", "host": "local"})", ""},
      {"good: ssh alias", R"({"host": "gpu-box"})", ""},
      {"good: user@host:port", R"({"host": "ubuntu@203.0.113.7:2222"})", ""},
      {"good: ipv6", R"({"host": "root@[2001:db8::1]:22"})", ""},
      {"good: port 65535", R"({"host": "h:65535"})", ""},
      {"good: full",
       R"({"name": "my-proj_1.0", "host": "me@box", "mappings": [{"local": ".", "remote": "~/ferry/p"},
           {"local": "data/raw", "remote": "/workspace/raw"}], "exclude": ["*.pt", "!keep.pt", "/build/"],
           "interpreter": "~/venv/bin/python", "env": {"CUDA_VISIBLE_DEVICES": "0", "_X": ""},
           "tunnels": [{"name": "jupyter", "kind": "local", "localPort": 8888, "remoteHost": "localhost", "remotePort": 8888},
                       {"name": "pycharm-debug", "kind": "reverse", "localPort": 5679, "remotePort": 5679}],
           "autostop": {"enabled": true, "idleMinutes": 45, "action": "notify"}, "sshConfig": "~/.ssh/config.ferry"})",
       ""},
      {"good: remote is ~", R"({"mappings": [{"remote": "~"}]})", ""},
      {"good: unicode and spaces in paths", R"({"mappings": [{"local": "données/été 1", "remote": "/srv/données été"}]})", ""},
      {"good: dots that are not ..", R"({"mappings": [{"local": "a..b/.c", "remote": "/x/..y"}]})", ""},
      {"good: protect patterns", R"({"protect": ["/data/", "outputs/", "*.ckpt", "!outputs/keep.txt"]})", ""},
      {"good: protect empty", R"({"protect": []})", ""},
      {"good: integral float port", R"({"tunnels": [{"name": "t", "remotePort": 8080.0}]})", ""},

      {"bad: not an object", R"([1, 2])", ""},
      {"bad: unknown top-level key (typo)", R"({"mapings": []})", "/mapings"},
      {"bad: host empty", R"({"host": ""})", "/host"},
      {"bad: host a number", R"({"host": 22})", "/host"},
      {"bad: host with space", R"({"host": "my box"})", "/host"},
      {"bad: host port 0", R"({"host": "box:0"})", "/host"},
      {"bad: host port 65536", R"({"host": "box:65536"})", "/host"},
      {"bad: host port not numeric", R"({"host": "box:ssh"})", "/host"},
      {"bad: host starting with -", R"({"host": "-oProxyCommand=x"})", "/host"},
      {"bad: host two @", R"({"host": "a@b@c"})", "/host"},
      {"bad: name with slash", R"({"name": "a/b"})", "/name"},
      {"bad: name ..", R"({"name": ".."})", "/name"},
      {"bad: mappings empty", R"({"mappings": []})", "/mappings"},
      {"bad: mappings not array", R"({"mappings": {"local": "."}})", "/mappings"},
      {"bad: mapping not object", R"({"mappings": ["."]})", "/mappings/0"},
      {"bad: mapping remote missing", R"({"mappings": [{"local": "."}]})", "/mappings/0/remote"},
      {"bad: mapping remote empty", R"({"mappings": [{"remote": ""}]})", "/mappings/0/remote"},
      {"bad: mapping remote relative", R"({"mappings": [{"remote": "ferry/p"}]})", "/mappings/0/remote"},
      {"bad: mapping remote ~user", R"({"mappings": [{"remote": "~bob/p"}]})", "/mappings/0/remote"},
      {"bad: mapping remote with ..", R"({"mappings": [{"remote": "~/a/../../etc"}]})", "/mappings/0/remote"},
      {"bad: second mapping local absolute", R"({"mappings": [{"remote": "/a"}, {"local": "/etc", "remote": "/b"}]})",
       "/mappings/1/local"},
      {"bad: mapping local ..", R"({"mappings": [{"local": "../x", "remote": "/a"}]})", "/mappings/0/local"},
      {"bad: mapping local nested ..", R"({"mappings": [{"local": "a/..", "remote": "/a"}]})", "/mappings/0/local"},
      {"bad: mapping unknown key", R"({"mappings": [{"remote": "/a", "remot": "/b"}]})", "/mappings/0/remot"},
      {"bad: exclude not array", R"({"exclude": "*.pt"})", "/exclude"},
      {"bad: exclude item empty", R"({"exclude": ["a", ""]})", "/exclude/1"},
      {"bad: exclude item number", R"({"exclude": [1]})", "/exclude/0"},
      {"bad: protect not array", R"({"protect": "/data/"})", "/protect"},
      {"bad: protect item empty", R"({"protect": ["/data/", ""]})", "/protect/1"},
      {"bad: protect item object", R"({"protect": [{"path": "data"}]})", "/protect/0"},
      {"bad: protect typo", R"({"protects": ["/data/"]})", "/protects"},
      {"bad: interpreter empty", R"({"interpreter": ""})", "/interpreter"},
      {"bad: env not object", R"({"env": ["A=1"]})", "/env"},
      {"bad: env value number", R"({"env": {"CUDA_VISIBLE_DEVICES": 0}})", "/env/CUDA_VISIBLE_DEVICES"},
      {"bad: env value null", R"({"env": {"A": null}})", "/env/A"},
      {"bad: env name with dash", R"({"env": {"MY-VAR": "1"}})", "/env/MY-VAR"},
      {"bad: env name with slash (pointer escaped)", R"({"env": {"a/b": "1"}})", "/env/a~1b"},
      {"bad: tunnels not array", R"({"tunnels": {}})", "/tunnels"},
      {"bad: tunnel port 0", R"({"tunnels": [{"name": "t", "remotePort": 0}]})", "/tunnels/0/remotePort"},
      {"bad: tunnel port 70000", R"({"tunnels": [{"name": "t", "remotePort": 70000}]})", "/tunnels/0/remotePort"},
      {"bad: tunnel port string", R"({"tunnels": [{"name": "t", "remotePort": "22"}]})", "/tunnels/0/remotePort"},
      {"bad: tunnel port fractional", R"({"tunnels": [{"name": "t", "remotePort": 80.5}]})", "/tunnels/0/remotePort"},
      {"bad: tunnel port negative", R"({"tunnels": [{"name": "t", "remotePort": -1}]})", "/tunnels/0/remotePort"},
      {"bad: tunnel port huge", R"({"tunnels": [{"name": "t", "remotePort": 18446744073709551615}]})", "/tunnels/0/remotePort"},
      {"bad: tunnel localPort 0", R"({"tunnels": [{"name": "t", "remotePort": 1, "localPort": 0}]})", "/tunnels/0/localPort"},
      {"bad: tunnel remotePort missing", R"({"tunnels": [{"name": "t"}]})", "/tunnels/0/remotePort"},
      {"bad: tunnel name missing", R"({"tunnels": [{"remotePort": 1}]})", "/tunnels/0/name"},
      {"bad: tunnel name with space", R"({"tunnels": [{"name": "my tunnel", "remotePort": 1}]})", "/tunnels/0/name"},
      {"bad: tunnel kind", R"({"tunnels": [{"name": "t", "kind": "dynamic", "remotePort": 1}]})", "/tunnels/0/kind"},
      {"bad: tunnel remoteHost empty", R"({"tunnels": [{"name": "t", "remoteHost": "", "remotePort": 1}]})",
       "/tunnels/0/remoteHost"},
      {"bad: tunnel unknown key", R"({"tunnels": [{"name": "t", "remotePort": 1, "bind": "0.0.0.0"}]})", "/tunnels/0/bind"},
      {"bad: autostop not object", R"({"autostop": true})", "/autostop"},
      {"bad: autostop enabled string", R"({"autostop": {"enabled": "yes"}})", "/autostop/enabled"},
      {"bad: autostop idleMinutes 0", R"({"autostop": {"idleMinutes": 0}})", "/autostop/idleMinutes"},
      {"bad: autostop action", R"({"autostop": {"action": "terminate"}})", "/autostop/action"},
      {"bad: autostop unknown key", R"({"autostop": {"idle": 5}})", "/autostop/idle"},
      {"bad: sshConfig empty", R"({"sshConfig": ""})", "/sshConfig"},
      {"bad: $schema not a string", R"({"$schema": 1})", "/$schema"},
  };
  return corpus;
}

}  // namespace ferry::test
