// new_file_mode (helper/sync/new_file_mode.hpp): a file whose first bytes are "#!" is a script
// the box should be able to run (0755); anything else, a file too short to say, or one that
// cannot be read, is 0644. Runs on Linux and under Wine.
#define BOOST_TEST_MODULE new_file_mode
#include <boost/test/unit_test.hpp>

#include "helper/sync/new_file_mode.hpp"
#include "tests/support/temp_dir.hpp"

using ferry::sync::new_file_mode;

BOOST_AUTO_TEST_CASE(a_shebang_makes_a_script_and_nothing_else_does) {
  ferry::test::TempDir dir{"ferry-new-file-mode"};
  ferry::test::write_file(dir / "run.sh", "#!/bin/sh\necho hi\n");
  ferry::test::write_file(dir / "train.py", "#!/usr/bin/env python3\n");
  ferry::test::write_file(dir / "lib.py", "import os\n");
  ferry::test::write_file(dir / "hash.txt", "# !not a shebang\n");
  ferry::test::write_file(dir / "one", "#");
  ferry::test::write_file(dir / "empty", "");
  BOOST_TEST(new_file_mode(dir / "run.sh") == 0755u);
  BOOST_TEST(new_file_mode(dir / "train.py") == 0755u);
  BOOST_TEST(new_file_mode(dir / "lib.py") == 0644u);
  BOOST_TEST(new_file_mode(dir / "hash.txt") == 0644u);
  BOOST_TEST(new_file_mode(dir / "one") == 0644u);
  BOOST_TEST(new_file_mode(dir / "empty") == 0644u);
  BOOST_TEST(new_file_mode(dir / "missing") == 0644u);
}
