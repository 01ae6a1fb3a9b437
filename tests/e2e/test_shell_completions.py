#!/usr/bin/env python3
"""The real ferry's completion scripts in the real shells, and its man page through groff and man.

bash: the script is sourced in a non-interactive bash, the function `complete -p ferry` names is
called with COMP_WORDS/COMP_CWORD set as readline would; fish: `complete -C` on a command line; zsh:
`zsh -n`, then a TAB typed into an interactive zsh on a pseudo-terminal (compinit, the script in
$fpath, compadd wrapped to record what is offered). The names of the sub-commands come from
`ferry --help`, so a new command that the generators miss fails here. Also checks that the files
the build writes into share/ are what the commands print.

Usage: test_shell_completions.py FERRY BUILD_DIR
"""
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

FERRY = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("build/bin/ferry")
BUILD = Path(sys.argv[2]) if len(sys.argv) > 2 else Path("build")
SHARE_FILES = {
    ("completion", "bash"): "share/bash-completion/completions/ferry",
    ("completion", "zsh"): "share/zsh/site-functions/_ferry",
    ("completion", "fish"): "share/fish/vendor_completions.d/ferry.fish",
    ("man-page",): "share/man/man1/ferry.1",
}


def ferry(*args):
    return subprocess.run([str(FERRY), *args], check=True, capture_output=True, text=True).stdout


def visible_commands():
    """The sub-command names `ferry --help` lists."""
    text = ferry("--help")
    block = text.split("Subcommands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in block.splitlines() if line.startswith("  ") and not line.startswith("   ")]


class ShellCompletions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="ferry-completions-"))
        cls.scripts = {}
        for shell, name in (("bash", "ferry"), ("zsh", "_ferry"), ("fish", "ferry.fish")):
            (cls.tmp / shell).mkdir()
            cls.scripts[shell] = cls.tmp / shell / name
            cls.scripts[shell].write_text(ferry("completion", shell))
        cls.commands = visible_commands()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_build_wrote_the_same_files_into_share(self):
        for args, rel in SHARE_FILES.items():
            path = BUILD / rel
            self.assertTrue(path.is_file(), f"{path} missing: the POST_BUILD step of ferry writes it")
            self.assertEqual(path.read_text(), ferry(*args), f"{path} differs from `ferry {' '.join(args)}`")

    # ---- bash ----

    def bash_complete(self, *words):
        """COMPREPLY for the command line `words` (the last one is being completed)."""
        script = (
            'source "$1"; shift\n'
            'fn=$(complete -p ferry | sed -E "s/.*-F ([^ ]+) .*/\\1/")\n'
            'COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}\n'
            '"$fn" ferry "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"\n'
            'printf "%s\\n" "${COMPREPLY[@]}"\n'
        )
        run = subprocess.run(["bash", "--norc", "--noprofile", "-c", script, "bash", str(self.scripts["bash"]), *words],
                             capture_output=True, text=True, timeout=30, cwd=self.tmp)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stderr, "")
        return [w for w in run.stdout.splitlines() if w]

    def test_bash_completes_sub_commands(self):
        self.assertEqual(self.bash_complete("ferry", "sy"), ["sync"])
        self.assertEqual(sorted(self.bash_complete("ferry", "")), sorted(self.commands))
        self.assertIn("completion", self.commands)
        self.assertEqual(self.bash_complete("ferry", "man"), [])  # man-page is hidden
        self.assertEqual(self.bash_complete("ferry", "--project", "/tmp", "sy"), ["sync"])  # an option's value is skipped
        self.assertEqual(sorted(self.bash_complete("ferry", "ide", "")), ["pycharm", "vscode"])

    def test_bash_completes_each_commands_own_options(self):
        sync = self.bash_complete("ferry", "sync", "--")
        for option in ("--dry-run", "--delete", "--no-delete", "--json", "--log-level"):  # sync's own, and a global one
            self.assertIn(option, sync)
        self.assertNotIn("--cap", sync)
        env_sync = self.bash_complete("ferry", "env", "sync", "--")
        self.assertIn("--cap", env_sync)
        self.assertNotIn("--delete", env_sync)
        self.assertEqual(sorted(self.bash_complete("ferry", "sync", "--d")), ["--delete", "--dry-run"])

    def test_bash_completes_values_and_file_names(self):
        self.assertIn("debug", self.bash_complete("ferry", "--log-level", ""))
        self.assertEqual(sorted(self.bash_complete("ferry", "completion", "")), ["bash", "fish", "zsh"])
        self.assertEqual(self.bash_complete("ferry", "sync", "ba"), ["bash"])  # the folder in the cwd: a path to push

    # ---- fish ----

    def fish_complete(self, line):
        run = subprocess.run(["fish", "--no-config", "-c", 'source $argv[1]; complete -C $argv[2]', str(self.scripts["fish"]), line],
                             capture_output=True, text=True, timeout=30, cwd=self.tmp)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stderr, "")
        return [entry.split("\t")[0] for entry in run.stdout.splitlines()]

    def test_fish_completes_commands_options_and_values(self):
        sy = self.fish_complete("ferry sy")
        self.assertEqual(sy, ["sync"])
        self.assertEqual(sorted(self.fish_complete("ferry ")), sorted(self.commands))
        self.assertEqual(sorted(self.fish_complete("ferry sync --d")), ["--delete", "--dry-run"])
        env_sync = self.fish_complete("ferry env sync --")
        self.assertIn("--cap", env_sync)
        self.assertNotIn("--delete", env_sync)
        self.assertEqual(self.fish_complete("ferry --project /tmp sy"), ["sync"])
        self.assertEqual(sorted(self.fish_complete("ferry completion ")), ["bash", "fish", "zsh"])
        self.assertIn("debug", self.fish_complete("ferry sync --log-level "))

    def test_fish_descriptions_come_with_the_names(self):
        run = subprocess.run(["fish", "--no-config", "-c", 'source $argv[1]; complete -C "ferry sy"', str(self.scripts["fish"])],
                             capture_output=True, text=True, timeout=30)
        self.assertRegex(run.stdout, r"^sync\tPush every mapping")

    # ---- zsh ----

    def test_zsh_reads_the_script(self):
        run = subprocess.run(["zsh", "-n", str(self.scripts["zsh"])], capture_output=True, text=True, timeout=30)
        self.assertEqual((run.returncode, run.stderr), (0, ""))

    def test_zsh_completes_on_a_terminal(self):
        zsh = InteractiveZsh(self.tmp, self.scripts["zsh"].parent)
        try:
            self.assertEqual(zsh.offered("ferry sy"), ["sync"])
            self.assertEqual(sorted(zsh.offered("ferry sync --d")), ["--delete", "--dry-run"])
            env_sync = zsh.offered("ferry env sync --")
            self.assertIn("--cap", env_sync)
            self.assertNotIn("--delete", env_sync)
            self.assertEqual(sorted(zsh.offered("ferry completion ")), ["bash", "fish", "zsh"])
            self.assertIn("debug", zsh.offered("ferry sync --log-level "))
            self.assertEqual(sorted(zsh.offered("ferry ")), sorted(self.commands))
        finally:
            zsh.close()

    # ---- man page ----

    def test_the_man_page_renders_without_warnings(self):
        page = self.tmp / "ferry.1"
        page.write_text(ferry("man-page"))
        run = subprocess.run(["groff", "-man", "-Tutf8", "-ww", str(page)], capture_output=True, text=True, timeout=60)
        self.assertEqual((run.returncode, run.stderr), (0, ""))
        text = re.sub(r".\x08", "", run.stdout)  # overstrike bold and underline
        for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "GLOBAL OPTIONS", "COMMANDS", "EXIT STATUS", "VERSION"):
            self.assertRegex(text, rf"(?m)^{section}$")
        for command in self.commands:
            self.assertRegex(text, rf"(?m)^   ferry {re.escape(command)}$", f"no subsection for {command}")
        self.assertIn("ferry - edit locally, run on a remote GPU box", text)
        self.assertIn("--dry-run", text)
        self.assertNotIn("man-page", text)
        if shutil.which("man"):  # as lintian reads it
            env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8")
            run = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", str(page)],
                                 capture_output=True, text=True, timeout=60, env=env)
            self.assertEqual((run.returncode, run.stderr), (0, ""))


ZLE_READING = r".*zsh-ready.*\x1b\[\?2004h"  # the prompt (PS1 below), then bracketed paste on


class InteractiveZsh:
    """An interactive zsh on a pseudo-terminal with compinit and ferry's script in $fpath; compadd
    is wrapped to append what each call offers to a file, so a TAB's candidates can be read back."""

    def __init__(self, tmp, fpath_dir):
        self.hits = tmp / "zsh-hits"
        home = tmp / "zsh-home"
        home.mkdir(exist_ok=True)
        (home / ".zshrc").write_text(f"""
PS1='zsh-ready%# '
bindkey -e
LISTMAX=100000
fpath=({fpath_dir} $fpath)
autoload -Uz compinit && compinit -u -D
compadd() {{
  # a call that only asks (-O, -A, -D) adds nothing
  if (( ${{@[(I)-[OAD]]}} )); then builtin compadd "$@"; return; fi
  local -a __hits
  builtin compadd -A __hits "$@"
  print -rl -- $__hits >> {self.hits}
  builtin compadd "$@"
}}
""")
        env = dict(os.environ, ZDOTDIR=str(home), HOME=str(home), TERM="xterm", COLUMNS="200", LINES="50")
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.chdir(tmp)
            os.execvpe("zsh", ["zsh", "-i"], env)
        # Keys that arrive before the line editor has the terminal can be thrown away: wait until it
        # has drawn the prompt and turned on bracketed paste, as it does just before reading keys.
        self.read_until(ZLE_READING)

    def read_until(self, pattern, timeout=30):
        """Reads the terminal until `pattern` (a regex over the bytes) has appeared."""
        seen, deadline = b"", time.monotonic() + timeout
        while not re.search(pattern.encode(), seen, re.S):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise AssertionError(f"zsh: no {pattern} within {timeout} s; it wrote: {seen[-2000:]!r}")
            try:
                seen += os.read(self.fd, 65536)
            except OSError as e:
                raise AssertionError(f"zsh ended before {pattern}: {e}; it wrote: {seen[-2000:]!r}")
        return seen

    def offered(self, line):
        """What one TAB at the end of `line` offers."""
        self.hits.unlink(missing_ok=True)
        # TAB completes; Ctrl-U then clears the line (zle takes keys in order), and the marker's
        # output proves the completion is over (its typed form, DONE-$((6*7)), is not the marker).
        os.write(self.fd, line.encode() + b"\t")
        os.write(self.fd, b"\x15print DONE-$((6*7))\r")
        self.read_until("DONE-42" + ZLE_READING)
        return self.hits.read_text().split() if self.hits.exists() else []

    def close(self):
        try:
            os.write(self.fd, b"exit\r")
            os.waitpid(self.pid, 0)
        finally:
            os.close(self.fd)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
