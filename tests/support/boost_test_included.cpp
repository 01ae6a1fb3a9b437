// Boost.Test's framework and main() compiled in, for builds with no Boost.Test library to link
// (the Windows shape, cmake/windows_shape.cmake): the test files stay as they are.
#include <boost/test/included/unit_test.hpp>
