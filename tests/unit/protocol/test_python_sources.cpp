// The env mirror's filter: sources, stubs and metadata in; extensions, bytecode, data out.
#define BOOST_TEST_MODULE python_sources
#include <boost/test/unit_test.hpp>

#include "protocol/python_sources.hpp"

using namespace ferry::protocol;

BOOST_AUTO_TEST_CASE(sources_stubs_and_metadata_are_kept) {
  BOOST_TEST(is_python_source_file("torch/__init__.py"));
  BOOST_TEST(is_python_source_file("torch/nn/modules/linear.py"));
  BOOST_TEST(is_python_source_file("torch/_C/__init__.pyi"));
  BOOST_TEST(is_python_source_file("torch/py.typed"));
  BOOST_TEST(is_python_source_file("six.py"));
  BOOST_TEST(is_python_source_file("numpy-1.24.2.dist-info/METADATA"));
  BOOST_TEST(is_python_source_file("numpy-1.24.2.dist-info/RECORD"));
  BOOST_TEST(is_python_source_file("six-1.16.0.egg-info"));  // Debian's single-file PKG-INFO
  BOOST_TEST(is_python_source_file("foo.egg-info/top_level.txt"));
}

BOOST_AUTO_TEST_CASE(binaries_bytecode_and_data_are_left_out) {
  BOOST_TEST(!is_python_source_file("torch/_C.cpython-311-x86_64-linux-gnu.so"));
  BOOST_TEST(!is_python_source_file("torch/lib/libtorch_cpu.so"));
  BOOST_TEST(!is_python_source_file("torch/__pycache__/__init__.cpython-311.pyc"));
  BOOST_TEST(!is_python_source_file("torch/include/ATen/ATen.h"));
  BOOST_TEST(!is_python_source_file("matplotlib/mpl-data/fonts/ttf/DejaVuSans.ttf"));
  BOOST_TEST(!is_python_source_file("distutils-precedence.pth"));
  BOOST_TEST(!is_python_source_file("pkg/sub.dist-info/METADATA"));  // metadata only at the top
  BOOST_TEST(!is_python_source_file("torch/.ferry-tmp.x.py.0001"));
  BOOST_TEST(!is_python_source_file(""));
  BOOST_TEST(!is_python_source_file("/etc/passwd.py"));
  BOOST_TEST(is_python_source_pruned_dir("torch/__pycache__"));
  BOOST_TEST(!is_python_source_pruned_dir("torch/nn"));
}

BOOST_AUTO_TEST_CASE(package_names_for_the_cap_report) {
  BOOST_TEST(python_package_of("torch/nn/x.py") == "torch");
  BOOST_TEST(python_package_of("six.py") == "six");
  BOOST_TEST(python_package_of("typing_extensions.pyi") == "typing_extensions");
  BOOST_TEST(python_package_of("torch-1.13.1.dist-info/RECORD") == "torch");
  BOOST_TEST(python_package_of("six-1.16.0.egg-info") == "six");
}
