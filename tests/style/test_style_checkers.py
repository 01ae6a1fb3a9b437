#!/usr/bin/env python3
"""Tests of scripts/check_function_length.py, scripts/check_layers.py,
scripts/check_registered_tests.py and scripts/gen_wire_ts.py on small made-up inputs:
each checker must find what it is there to find, and nothing else."""
import importlib.util
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def load(name):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


length = load("check_function_length")
layers = load("check_layers")
registered = load("check_registered_tests")
wire = load("gen_wire_ts")

TRICKY = textwrap.dedent('''\
    // A comment with braces { { {
    #if defined(X)
    #include <a.h>
    #endif
    #define BLOCK(x) { x
    namespace a::b {
    template <class T>
    T twice(T t) {
      return t + t;
    }
    struct S : Base {
      S(int a) : a_(a), b_{a, 2}, c_{} {
        int x = 1'000'000;
        auto h = 0xFF'FF;
        char q = '{';
        const char* r = R"x(}}}{{)x";
        const char* s = "}\\"}";
        /* } */
      }
      void f() const { auto g = [&] { return 1; }; }
      int a_, b_[2], c_;
    };
    auto lam = [](int x) {
      return x;
    };
    extern "C" void handler(int) {
    }
    const int table[] = {1, 2};
    class C final {
     public:
      bool operator()(int) const {
        if (true) { return false; }
        return true;
      }
    };
    }  // namespace a::b
    ''')


class FunctionLength(unittest.TestCase):
    def scan(self, text):
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "t.cpp"
            path.write_text(text)
            return {(f.name, f.line, f.lines) for f in length.scan(path)}

    def test_finds_each_function_with_its_first_line_and_length(self):
        self.assertEqual(self.scan(TRICKY), {
            ("twice", 7, 4),        # from the template line
            ("S", 12, 8),           # braces in literals, comments and initializers ignored
            ("f", 20, 1),           # the lambda inside is part of it
            ("lam", 23, 3),
            ("handler", 26, 2),
            ("operator()", 31, 4),
        })

    def test_a_long_function_is_over_the_limit(self):
        body = "int f() {\n" + "  ++x;\n" * 149 + "}\n"
        self.assertEqual(self.scan(body), {("f", 1, 151)})


class Layers(unittest.TestCase):
    DRAWING = "```layers\nhelper top\nhelper middle\nagent agentlib\nshared bottom\n```\n"

    def check(self, graph_lines, drawing=DRAWING, files=None):
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            (root / "graph.txt").write_text("\n".join(graph_lines) + "\n")
            (root / "arch.md").write_text(drawing)
            for name, text in (files or {}).items():
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                (root / name).write_text(text)
            dirs, links, sources = layers.read_graph(root / "graph.txt")
            row_of, side_of, errors = layers.read_drawing(root / "arch.md")
            return errors + layers.check_links(dirs, links, row_of, side_of) + layers.check_includes(dirs, links, sources, root)

    TARGETS = ["target top helper/top", "target middle helper/middle", "target agentlib remote-runtime/a",
               "target bottom protocol"]

    def test_downward_links_pass(self):
        self.assertEqual(self.check(self.TARGETS + ["link top middle public", "link middle bottom private",
                                                    "link agentlib bottom public"]), [])

    def test_an_upward_link_fails(self):
        errors = self.check(self.TARGETS + ["link middle top private"])
        self.assertEqual(errors, ["middle links top, which is drawn on its own row or above it"])

    def test_a_link_to_the_other_side_fails(self):
        errors = self.check(self.TARGETS + ["link agentlib middle private"])
        self.assertIn("agentlib (agent) links middle, a target of the helper side", errors)

    def test_an_undrawn_target_fails(self):
        errors = self.check(self.TARGETS + ["target extra helper/extra"])
        self.assertEqual(len(errors), 1)
        self.assertIn("extra (helper/extra) is not in the layers drawing", errors[0])

    def test_including_what_is_only_linked_privately_below_fails(self):
        graph = self.TARGETS + ["link top middle public", "link middle bottom private",
                                "source top helper/top/t.cpp", "source middle helper/middle/m.cpp",
                                "source bottom protocol/b.cpp"]
        files = {"helper/top/t.cpp": '#include "helper/middle/m.hpp"\n#include "protocol/b.hpp"\n'}
        self.assertEqual(self.check(graph, files=files),
                         ["helper/top/t.cpp includes protocol/b.hpp of bottom, which top does not link"])
        # A PUBLIC link passes the right to call on.
        graph = [g.replace("link middle bottom private", "link middle bottom public") for g in graph]
        self.assertEqual(self.check(graph, files=files), [])


class RegisteredTests(unittest.TestCase):
    LIST = "# a comment\n\ntest_a\tprotocol;unit\ntest_b\ttrain\ntest_c\t\n"

    def test_the_list_parses_with_labels_and_comments(self):
        self.assertEqual(registered.parse_list(self.LIST),
                         {"test_a": ["protocol", "unit"], "test_b": ["train"], "test_c": []})

    def test_a_listed_test_not_registered_is_missing(self):
        want = registered.parse_list(self.LIST)
        have = {"test_a": ["protocol", "unit"], "test_c": []}
        self.assertEqual(registered.compare(want, have), (["test_b"], [], []))

    def test_a_new_test_is_only_extra_and_a_changed_label_is_reported(self):
        want = registered.parse_list(self.LIST)
        have = {"test_a": ["protocol"], "test_b": ["train"], "test_c": [], "test_new": ["sync"]}
        self.assertEqual(registered.compare(want, have), ([], ["test_new"], ["test_a"]))

    def test_a_label_checks_only_its_tests(self):
        want = registered.parse_list(self.LIST)
        self.assertEqual(registered.compare(want, {"test_a": ["protocol", "unit"]}, "protocol"), ([], [], []))
        # A test that lost the label is missing from that label's run.
        self.assertEqual(registered.compare(want, {"test_a": ["unit"], "test_b": ["train"]}, "protocol"), (["test_a"], [], []))



class WireTypes(unittest.TestCase):
    DOC = {
        "requests": {"run/list": {"params": {"type": "object", "properties": {"all": {"type": "boolean"}}},
                                  "result": {"type": "object", "required": ["runs"],
                                             "properties": {"runs": {"type": "array", "items": {"$ref": "#/$defs/Run"}}},
                                             "additionalProperties": False}}},
        "serverRequests": {},
        "notifications": {"run/exited": {"params": {"$ref": "#/$defs/Run"}}},
        "commands": {"ferry.stop": {"result": {"type": ["string", "null"]}}},
        "$defs": {"Run": {"type": "object", "required": ["id"], "description": "a run",
                          "properties": {"id": {"type": "string"}, "state": {"enum": ["running", "exited"]},
                                         "tags": {"type": "array", "items": {"type": ["string", "integer"]}}},
                          "additionalProperties": False}},
    }

    def test_types_and_tables(self):
        ts = wire.generate(self.DOC)
        self.assertIn("/** a run */\nexport interface Run {\n  id: string;\n  state?: 'running' | 'exited';\n"
                      "  tags?: (string | number)[];\n}\n", ts)
        self.assertIn("export interface RunListParams {\n  all?: boolean;\n  [key: string]: unknown;\n}", ts)
        self.assertIn("  'run/list': { params: RunListParams; result: RunListResult };", ts)
        self.assertIn("  'run/exited': Run;", ts)  # a bare $ref names the type, no alias
        self.assertIn("export type FerryStopResult = string | null;", ts)

    def test_bad_schemas_are_refused(self):
        for bad in ({"$ref": "other.json#/x"}, {"type": "tuple"}):
            doc = {**self.DOC, "$defs": {"Run": bad}}
            with self.assertRaises(wire.SchemaError):
                wire.generate(doc)
        doc = {**self.DOC, "commands": {"ferry.stop": {"params": {}, "result": {}}}}
        with self.assertRaises(wire.SchemaError):  # commands have a result only
            wire.generate(doc)

    def test_check_fails_on_a_stale_file(self):
        import json
        import subprocess
        with tempfile.TemporaryDirectory() as d:
            schema, out = Path(d) / "s.json", Path(d) / "wire.ts"
            schema.write_text(json.dumps(self.DOC))
            run = lambda *a: subprocess.run([sys.executable, str(SCRIPTS / "gen_wire_ts.py"), "--schema", str(schema),
                                             "--output", str(out), *a], capture_output=True, text=True)
            self.assertEqual(run("--check").returncode, 1)  # missing
            self.assertEqual(run().returncode, 0)
            self.assertEqual(run("--check").returncode, 0)
            out.write_text(out.read_text().replace("id: string", "id: number"))
            stale = run("--check")
            self.assertEqual(stale.returncode, 1)
            self.assertIn("run scripts/gen_wire_ts.py", stale.stderr)

if __name__ == "__main__":
    sys.exit(unittest.main())
